// LocalWorkers: the order in which exits collected in one reaping pass are reported; workers
// spawned in a second batch, while the first still run.
#include "launcher/workers/local_workers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "launcher/output/logging.h"
#include "tests/support/files.h"
#include "tests/support/wait_until.h"

namespace hvdrun::launcher {
namespace {

using hvdrun::test::read_file;

struct TempDir {
  TempDir() {
    char name[] = "/tmp/hvdrun-local-workers-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::filesystem::path path;
};

// Rank 0 exits 1 and rank 2 dies by SIGKILL before the one reap() that collects both (as
// when rank 2 is killed and its ring peer exits because it vanished): rank 2 is the cause.
TEST(LocalWorkers, OnePassReportsAForeignSignalBeforeANonZeroExit) {
  setup_logging("warning");
  Watchdog watchdog = Watchdog::start();
  boost::asio::io_context io(1);
  Console console(io);
  OutputSink sink({3, false, std::nullopt}, console);
  std::vector<int> order;
  LocalWorkers workers(
      io, watchdog, sink,
      {[&](const WorkerId& id, ProcessEnd) { order.push_back(id.slot); }, [](const WorkerId&) {}});
  std::vector<LocalWorkers::Launch> launches;
  for (int rank = 0; rank < 3; ++rank) {
    const Slot slot{rank, rank, 3, 0, 1, 0, 1, 0, "localhost"};
    sink.add_worker(first_worker(slot), rank);
    launches.push_back(
        {first_worker(slot), slot, {"R=" + std::to_string(rank), "PATH=/usr/bin:/bin"}});
  }
  workers.spawn(
      {"/bin/sh", "-c", "case $R in 0) exit 1;; 2) sleep 0.1; kill -9 $$;; *) exit 0;; esac"},
      std::move(launches), false);
  // The exec reports (read by the io thread) say all three started; then all are zombies.
  io.run_for(std::chrono::milliseconds(200));
  const auto pids = workers.running_pids();
  ASSERT_EQ(pids.size(), 3u);
  EXPECT_TRUE(hvdrun::test::wait_until(
      [&] {
        return std::all_of(pids.begin(), pids.end(), [](const auto& worker) {
          siginfo_t info{};
          return ::waitid(P_PID, static_cast<id_t>(worker.second), &info,
                          WEXITED | WNOHANG | WNOWAIT) == 0 &&
                 info.si_pid == worker.second;
        });
      },
      std::chrono::seconds(30)))
      << "the three ended";
  workers.reap();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], 2);
  EXPECT_EQ(order[1], 0);
  workers.close_streams();
  io.run_for(std::chrono::seconds(2));
  watchdog.disarm();
}

// A second batch joins a running first one (as a replacement or a newcomer would): every
// worker's output and exit arrive under its own id, and the first batch's pumps keep working
// after the second was added.
TEST(LocalWorkers, ASecondBatchJoinsRunningWorkers) {
  setup_logging("warning");
  Watchdog watchdog = Watchdog::start();
  boost::asio::io_context io(1);
  TempDir dir;
  const auto out_path = dir.path / "out";
  UniqueFd out(::open(out_path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600));
  ASSERT_TRUE(out.valid());
  Console console(io, {out.get(), out.get()});
  OutputSink sink({4, false, std::nullopt, 10}, console);
  std::map<WorkerId, int> exits;
  LocalWorkers workers(
      io, watchdog, sink,
      {[&](const WorkerId& id, ProcessEnd end) { exits[id] = end.value; }, [](const WorkerId&) {}});
  const auto launch = [&](WorkerId id, int rank, const std::string& script) {
    const Slot slot{rank, id.slot, 2, 0, 1, 0, 1, id.host, "localhost"};
    sink.add_worker(id, rank);
    std::vector<LocalWorkers::Launch> one;
    one.push_back({id, slot, {"PATH=/usr/bin:/bin"}});
    workers.spawn({"/bin/sh", "-c", script}, std::move(one), false);
  };
  launch({0, 0, 0}, 0, "echo first-a; sleep 0.4; echo first-b; exit 3");
  launch({0, 1, 0}, 1, "sleep 0.2; echo second; exit 4");
  io.run_for(std::chrono::milliseconds(100));
  launch({0, 1, 1}, 2, "echo replacement; exit 5");  // added while the others run
  // Until every worker has exited and all their output is pumped (bounded: 10 s).
  // A pipe's EOF can come a moment before its process can be reaped: when the pumps have
  // nothing left to do, wait before the next reap instead of spinning through the bound.
  for (int i = 0; i < 200 && (exits.size() < 3 || workers.open_streams() > 0); ++i) {
    if (io.run_for(std::chrono::milliseconds(50)) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    io.restart();
    workers.reap();
  }
  EXPECT_EQ(exits, (std::map<WorkerId, int>{{{0, 0, 0}, 3}, {{0, 1, 0}, 4}, {{0, 1, 1}, 5}}));
  EXPECT_EQ(workers.size(), 3u);
  EXPECT_TRUE(console.drain(std::chrono::seconds(5), nullptr));
  const auto text = read_file(out_path);
  for (const char* line : {"[0]<stdout>:first-a\n", "[0]<stdout>:first-b\n", "[1]<stdout>:second\n",
                           "[2]<stdout>:replacement\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " missing from " << text;
  }
  workers.close_streams();
  io.run_for(std::chrono::seconds(1));
  watchdog.disarm();
}

}  // namespace
}  // namespace hvdrun::launcher
