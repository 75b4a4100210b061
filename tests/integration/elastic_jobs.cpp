// Helpers of the elastic integration tests (elastic_jobs.h).
#include "tests/integration/elastic_jobs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

namespace hvdrun::itest {

std::vector<std::string> elastic_job(const TempDir& dir, std::vector<std::string> flags, int epochs,
                                     const std::string& shell_first) {
  std::vector<std::string> args = std::move(flags);
  for (const std::string& a :
       {std::string("/bin/sh"), std::string("-c"),
        shell_first + "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; exec \"$@\"",
        std::string("sh"), std::string(TRAIN_ELASTIC), std::string("--epochs"),
        std::to_string(epochs), std::string("--samples"), std::string("8192"),
        std::string("--step-delay-ms"), std::string("15"), std::string("--commit-every"),
        std::string("5")}) {
    args.push_back(a);
  }
  return args;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  const auto partial = path.string() + ".new";
  std::ofstream(partial) << text;
  std::filesystem::rename(partial, path);
}

std::string hosts_script(const TempDir& dir, const std::string& body) {
  write_file(dir.path / "discover.sh", body + "cat '" + (dir.path / "hosts").string() + "'\n");
  return "/bin/sh " + (dir.path / "discover.sh").string();
}

std::string switch_hosts_command(const TempDir& dir, const std::string& later) {
  const std::string hosts = (dir.path / "hosts").string();
  return "cp '" + (dir.path / later).string() + "' '" + hosts + ".new' && mv '" + hosts +
         ".new' '" + hosts + "'";
}

pid_t pid_of_slot(const TempDir& dir, int slot, std::size_t workers) {
  wait_for_pids(dir.path, workers, std::chrono::seconds(20));
  std::ifstream in(dir.path / (std::to_string(slot) + ".pid"));
  pid_t pid = -1;
  in >> pid;
  return pid;
}

std::map<pid_t, std::pair<int, std::string>> finished(const std::string& out) {
  std::map<pid_t, std::pair<int, std::string>> done;
  const std::regex line(
      R"(pid (\d+) done as rank \d+/(\d+) after \d+ resets: weights ([0-9a-f]+))");
  for (const auto& text : lines_of(out)) {
    std::smatch m;
    if (std::regex_search(text, m, line)) {
      done[static_cast<pid_t>(std::stol(m[1]))] = {std::stoi(m[2]), m[3]};
    }
  }
  return done;
}

void expect_one_hash(const std::map<pid_t, std::pair<int, std::string>>& done,
                     const std::string& out) {
  std::set<std::string> hashes;
  for (const auto& [pid, entry] : done) hashes.insert(entry.second);
  EXPECT_EQ(hashes.size(), 1u) << out;
}

std::vector<std::pair<int, double>> generations(const std::string& err) {
  std::vector<std::pair<int, double>> out;
  const std::regex line(R"(^    \d+: (\d+) ranks?, started ([0-9.]+) s)");
  for (const auto& text : lines_of(err)) {
    std::smatch m;
    if (std::regex_search(text, m, line)) out.emplace_back(std::stoi(m[1]), std::stod(m[2]));
  }
  return out;
}

}  // namespace hvdrun::itest
