// Hang forensics on real PyTorch (gloo) and Horovod programs: rank 1 hangs in its own code
// while the others wait in an allreduce; SIGQUIT to hvdrun collects every rank's stacks and the
// job goes on: each rank's file holds its Python stack (every thread) and its native one, and
// the console shows the line each rank hangs in.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/compat/compat_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/support/files.h"

namespace hvdrun::itest {
namespace {

using hvdrun::test::read_file;

using std::chrono::milliseconds;
using std::chrono::seconds;

bool wait_for_file(const std::filesystem::path& path, const std::string& part,
                   milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (std::filesystem::exists(path) && read_file(path).find(part) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

void expect_stacks_of_a_hang(const std::string& framework,
                             const std::map<std::string, std::string>& env,
                             const std::string& waiting_line) {
  TempDir marks, output;
  HvdrunProcess hvdrun(
      {"--output-filename", output.path.string(), "-np", "2", kPython, job_script("hang_job.py"),
       "--framework", framework, "--marks", marks.path.string()},
      env);
  ASSERT_TRUE(wait_for_file(marks.path / "1.waiting", "", seconds(90)) &&
              wait_for_file(marks.path / "0.waiting", "", seconds(5)))
      << "the ranks did not reach the hang";
  std::this_thread::sleep_for(milliseconds(500));  // rank 0 inside its allreduce
  hvdrun.signal(SIGQUIT);
  const auto stacks = output.path / "stacks";
  const bool written = wait_for_file(stacks / "rank.1.txt", "---- native", seconds(20));
  hvdrun.signal(SIGTERM);
  const auto r = hvdrun.finish(seconds(30));
  ASSERT_TRUE(written) << r.err;
  const std::string one = read_file(stacks / "rank.1.txt");
  const std::string zero = read_file(stacks / "rank.0.txt");
  EXPECT_TRUE(contains(one, "---- Python, every thread (faulthandler) ----")) << one;
  EXPECT_TRUE(contains(one, "in stuck_in_its_own_code")) << one;
  EXPECT_TRUE(contains(one, "TID ")) << one;  // eu-stack's threads
  EXPECT_TRUE(contains(zero, waiting_line)) << zero;
  EXPECT_TRUE(contains(r.err, "hvdrun: stacks of 2 ranks (SIGQUIT from pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 1 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "hang_job.py\", line 15 in stuck_in_its_own_code")) << r.err;
  EXPECT_EQ(r.status, 143) << r.err;  // SIGQUIT did not end it; the SIGTERM did
}

TEST(PyTorchStacks, SigquitShowsTheLineAHungGlooRankIsIn) {
  expect_stacks_of_a_hang("torch", {}, "in all_reduce");
}

TEST(HorovodStacks, SigquitShowsTheLineAHungHorovodRankIsIn) {
  REQUIRE_HOROVOD();
  expect_stacks_of_a_hang("horovod", horovod_env(), "in synchronize");
}

}  // namespace
}  // namespace hvdrun::itest
