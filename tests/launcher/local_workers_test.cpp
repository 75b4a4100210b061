// LocalWorkers: the order in which exits collected in one reaping pass are reported.
#include "local_workers.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "logging.h"

namespace hvdrun::launcher {
namespace {

// Rank 0 exits 1 and rank 2 dies by SIGKILL before the one reap() that collects both (as
// when rank 2 is killed and its ring peer exits because it vanished): rank 2 is the cause.
TEST(LocalWorkers, OnePassReportsAForeignSignalBeforeANonZeroExit) {
  setup_logging("warning");
  Watchdog watchdog = Watchdog::start();
  boost::asio::io_context io(1);
  OutputSink sink({3, false, std::nullopt});
  std::vector<int> order;
  LocalWorkers workers(io, watchdog, sink,
                       {[&](int rank, RankEnd) { order.push_back(rank); }, [](int) {}});
  std::vector<Slot> slots;
  std::vector<std::vector<std::string>> envs;
  for (int rank = 0; rank < 3; ++rank) {
    slots.push_back({rank, rank, 3, 0, 1, 0, "localhost"});
    envs.push_back({"R=" + std::to_string(rank), "PATH=/usr/bin:/bin"});
  }
  workers.spawn(
      {"/bin/sh", "-c", "case $R in 0) exit 1;; 2) sleep 0.1; kill -9 $$;; *) exit 0;; esac"},
      slots, envs, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // all three are zombies now
  workers.reap();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], 2);
  EXPECT_EQ(order[1], 0);
  workers.close_streams();
  io.run_for(std::chrono::seconds(2));
  watchdog.disarm();
}

}  // namespace
}  // namespace hvdrun::launcher
