// Helpers of the compatibility tests (compat_jobs.h).
#include "tests/compat/compat_jobs.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <sstream>

namespace hvdrun::itest {

bool horovod_available() {
  return std::string(HOROVOD_DIR).size() > 0;
}

std::string horovod_skip_reason() {
  return std::string("Horovod compatibility tests skipped: ") + HOROVOD_SKIP;
}

std::map<std::string, std::string> horovod_env() {
  std::string path = std::string(HOROVOD_DIR) + "/lib/python3.11/site-packages";
  if (const char* own = std::getenv("PYTHONPATH"); own != nullptr && *own != '\0') {
    path += std::string(":") + own;
  }
  return {{"PYTHONPATH", path}};
}

std::string job_script(const std::string& name) {
  return std::string(COMPAT_DIR) + "/" + name;
}

std::vector<std::string> rank_lines(const std::string& out, int rank, const std::string& prefix) {
  const std::string head = "[" + std::to_string(rank) + "]<stdout>:" + prefix;
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(head)) lines.push_back(line.substr(head.size() - prefix.size()));
  }
  return lines;
}

std::string field(const std::string& line, const std::string& key) {
  const std::string marker = key + "=";
  std::size_t pos = 0;
  while ((pos = line.find(marker, pos)) != std::string::npos) {
    if (pos == 0 || line[pos - 1] == ' ') {
      const auto start = pos + marker.size();
      return line.substr(start, line.find(' ', start) - start);
    }
    pos += marker.size();
  }
  return {};
}

void expect_elastic_done(const std::string& out, int batches, const std::vector<int>& resets) {
  const auto size = std::to_string(resets.size());
  std::set<std::string> digests;
  for (std::size_t rank = 0; rank < resets.size(); ++rank) {
    const auto done = rank_lines(out, static_cast<int>(rank), "done ");
    ASSERT_EQ(done.size(), 1u) << out;
    EXPECT_EQ(field(done[0], "size"), size) << done[0];
    EXPECT_EQ(field(done[0], "resets"), std::to_string(resets[rank])) << done[0];
    EXPECT_EQ(field(done[0], "batch"), std::to_string(batches)) << done[0];
    EXPECT_EQ(field(done[0], "in_sync"), "True") << done[0];
    digests.insert(field(done[0], "params"));
  }
  EXPECT_EQ(digests.size(), 1u) << out;
}

}  // namespace hvdrun::itest
