// Helpers of the compatibility tests: where Horovod and the job scripts are, the environment
// that lets Debian's python3 import Horovod, and the per-rank lines of a job's output.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hvdrun::itest {

inline constexpr const char* kPython = "/usr/bin/python3";  // where python3-torch installs

// Skips the calling test (GTEST_SKIP) with the reason when Horovod is not unpacked.
#define REQUIRE_HOROVOD()                                            \
  do {                                                               \
    if (!horovod_available()) GTEST_SKIP() << horovod_skip_reason(); \
  } while (0)

bool horovod_available();
std::string horovod_skip_reason();
// PYTHONPATH=<Horovod's site-packages> (plus the test's own PYTHONPATH, if any).
std::map<std::string, std::string> horovod_env();
// COMPAT_DIR/<name>
std::string job_script(const std::string& name);

// The text after "[rank]<stdout>:" of every line of `out` from that rank that starts with
// `prefix` (e.g. "train "), in order.
std::vector<std::string> rank_lines(const std::string& out, int rank, const std::string& prefix);
// The value of " key=value" in `line` ("" if absent).
std::string field(const std::string& line, const std::string& key);

// Checks the "done" line of horovod_elastic_job.py's ranks 0..resets.size()-1 in `out`: one
// each, in a generation of that size, at batch `batches`, with resets[rank] re-formations and
// weights in sync; and that they all have the same weights.
void expect_elastic_done(const std::string& out, int batches, const std::vector<int>& resets);

}  // namespace hvdrun::itest
