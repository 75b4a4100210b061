// Warm spares of a real elastic Horovod 0.28.1 job (hvd.elastic.run): the spare starts with the
// job, imports torch and Horovod, and waits in its first hvd.init() (hvdrun's Python hook holds
// it at hvdrun's Horovod rendezvous); when a worker dies, the next generation takes the spare,
// so the job keeps its 3 workers, the spare gets rank 0's state in the sync, and every rank
// ends with the same parameters. The spare started after the host's cooldown is told at the
// end that it is not needed, and exits 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include "tests/compat/compat_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

// hvdrun's arguments for horovod_elastic_job.py at 3 workers with 1 spare on localhost:4, each
// writing its pid to DIR/<HVDRUN_SLOT>.pid: `flags` for hvdrun, `args` for the program.
std::vector<std::string> spares_job(const TempDir& dir, const std::vector<std::string>& flags,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> all = {
      "-H",       "localhost:4", "-np",      "3", "--min-np", "3",
      "--max-np", "3",           "--spares", "1", "-x",       "HOROVOD_GLOO_TIMEOUT_SECONDS=5"};
  all.insert(all.end(), flags.begin(), flags.end());
  for (const std::string& a :
       {std::string("/bin/sh"), std::string("-c"),
        "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; exec \"$@\"", std::string("sh"),
        std::string(kPython), job_script("horovod_elastic_job.py")}) {
    all.push_back(a);
  }
  all.insert(all.end(), args.begin(), args.end());
  return all;
}

TEST(HorovodSpares, ADeadWorkersPlaceGoesToTheWarmSpareAndTheJobKeepsItsSize) {
  REQUIRE_HOROVOD();
  TempDir dir;
  HvdrunProcess job(spares_job(dir, {"--blacklist-cooldown-range", "1", "1"},
                               {"--fail-slot", "1", "--fail-at", "10", "--batches", "60"}),
                    horovod_env());
  const auto pids = wait_for_pids(dir.path, 4, seconds(60));  // 3 workers and the spare
  ASSERT_EQ(pids.size(), 4u);
  pid_t spare = -1;
  std::ifstream(dir.path / "3.pid") >> spare;
  const auto r = job.finish(seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "slot 1 dies at batch 10")) << r.out;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 1: 3 workers, 1 of them new (1 a warm spare)"))
      << r.err;
  // The job kept its size: 3 ranks at the end, the spare among them (it never reset: it
  // joined the new generation and took the state).
  expect_elastic_done(r.out, 60, {1, 1, 0});
  const auto done = rank_lines(r.out, 2, "done ");
  ASSERT_EQ(done.size(), 1u) << r.out;
  EXPECT_EQ(field(done[0], "pid"), std::to_string(spare)) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(hvdrun: spares: 2 started, 1 promoted \(spare 3 \(host localhost, )"
                        R"(waiting [0-9.]+ ms\)\), 0 ended while they waited, 1 not needed )"
                        R"(at the end)")))
      << r.err;
  // The refill, told at the end that it is not needed, said so and exited 0.
  EXPECT_TRUE(contains(r.out, "[spare.4]<stdout>:hvdrun: spare 4 is not needed")) << r.out;
  EXPECT_TRUE(wait_until_gone(pids, seconds(5)).empty());
}

// True once `pid` holds a TCP connection: a parked spare's query at hvdrun's Horovod rendezvous
// (before its hvd.init() it has no other).
bool holds_a_connection(pid_t pid) {
  const std::string command =
      "ss -Htnp state established 2>/dev/null | grep -q 'pid=" + std::to_string(pid) + ",'";
  return std::system(command.c_str()) == 0;
}

// A spare that stops asking while it waits (SIGSTOP: its queries are its heartbeats) is lost:
// hvdrun kills it and starts another, which is told at the end that it is not needed.
TEST(HorovodSpares, ASpareThatStopsAskingWhileItWaitsIsReplaced) {
  REQUIRE_HOROVOD();
  TempDir dir;
  HvdrunProcess job(spares_job(dir, {}, {"--batches", "400", "--step-delay", "0.05"}),
                    horovod_env());
  const auto pids = wait_for_pids(dir.path, 4, seconds(60));
  ASSERT_EQ(pids.size(), 4u);
  pid_t spare = -1;
  std::ifstream(dir.path / "3.pid") >> spare;
  const auto until = std::chrono::steady_clock::now() + seconds(60);
  while (!holds_a_connection(spare) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(holds_a_connection(spare)) << "spare 3 never asked to be promoted";
  ASSERT_EQ(::kill(spare, SIGSTOP), 0);
  const auto r = job.finish(seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(hvdrun: spare 3 \(host localhost, pid [0-9]+\) missed its heartbeats )"
                        R"(\(no query at hvdrun's Horovod rendezvous for 3000 ms\): killed while )"
                        R"(it waited; another started)")))
      << r.err;
  expect_elastic_done(r.out, 400, {0, 0, 0});
  EXPECT_TRUE(contains(r.out, "[spare.4]<stdout>:hvdrun: spare 4 is not needed")) << r.out;
  EXPECT_TRUE(wait_until_gone(pids, seconds(5)).empty());
}

}  // namespace
}  // namespace hvdrun::itest
