// A console that nobody reads (`hvdrun ... | less` paused, a stopped terminal, a slow pipe):
// the launcher still acts at once on a failing rank and on a signal, blames the right rank,
// and loses no line the reader later takes. The test holds hvdrun's stdout pipe unread.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Waits until hvdrun has exited (a zombie counts), for at most `limit`.
bool exits_within(const HvdrunProcess& hvdrun, milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (alive(hvdrun.pid())) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// Ranks 0 and 1 fill the console; rank 2 exits 3. Before anyone reads stdout, hvdrun has
// terminated ranks 0 and 1; afterwards the reader gets every line, and rank 2 is blamed.
TEST(Backpressure, ARankFailureIsHandledWhileNothingReadsStdout) {
  TempDir dir;
  HvdrunProcess hvdrun({"-np", "3", worker(), "flood", dir.path.string(), "2", "3"});
  const auto workers = wait_for_pids(dir.path, 3, seconds(20));
  ASSERT_EQ(workers.size(), 3u);
  EXPECT_TRUE(wait_until_gone(workers, seconds(20)).empty())
      << "ranks still run while hvdrun's stdout is not read";
  EXPECT_TRUE(alive(hvdrun.pid())) << "hvdrun must wait for its output to be read";
  const auto r = hvdrun.finish(seconds(60));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: rank 2 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "exited with code 3; terminating 2 other ranks")) << r.err;
  EXPECT_TRUE(contains(r.err, "job failed: first failure was rank 2 on localhost")) << r.err;
  const auto lines = check_flood_lines(r.out, false);
  EXPECT_GT(lines.count(0) ? lines.at(0) : 0, 0) << r.err;
  EXPECT_GT(lines.count(1) ? lines.at(1) : 0, 0) << r.err;
}

// SIGTERM while nothing reads stdout: the workers end at once, and hvdrun gives the console a
// bounded time (2 s from the signal, a timer's bound: not asserted here, where a loaded or
// sanitized run is slower) before it exits 143 on its own, saying what was not written.
TEST(Backpressure, SigtermIsHandledWhileNothingReadsStdout) {
  TempDir dir;
  HvdrunProcess hvdrun({"-np", "2", worker(), "flood", dir.path.string(), "-1", "0"});
  const auto workers = wait_for_pids(dir.path, 2, seconds(20));
  ASSERT_EQ(workers.size(), 2u);
  std::this_thread::sleep_for(milliseconds(300));  // the console is full by now
  hvdrun.signal(SIGTERM);
  EXPECT_TRUE(wait_until_gone(workers, seconds(10)).empty());
  EXPECT_TRUE(exits_within(hvdrun, seconds(20))) << "hvdrun waits for a reader after SIGTERM";
  const auto r = hvdrun.finish(seconds(20));
  EXPECT_EQ(r.status, 143) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: interrupted (SIGTERM), terminating 2 ranks")) << r.err;
  EXPECT_TRUE(contains(r.err, "bytes of output were not written: nothing reads hvdrun's stdout"))
      << r.err;
  check_flood_lines(r.out, true);
}

}  // namespace
}  // namespace hvdrun::itest
