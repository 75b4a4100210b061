// ConnectPool: the hosts' connects on a bounded number of threads, each run once, all of them
// done when finish() returns.
#include "launcher/remote/connect_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

namespace hvdrun::launcher::remote {
namespace {

// 1,000 connects that all block until released: never more than the bound run at once, and
// the pool never has more threads than that.
TEST(ConnectPool, AThousandConnectsRunOnAtMostTheBoundOfThreads) {
  constexpr std::size_t kBound = 8;
  ConnectPool pool(kBound);
  std::promise<void> release;
  const auto released = release.get_future().share();
  std::atomic<int> running{0}, most{0}, done{0};
  for (int i = 0; i < 1000; ++i) {
    pool.post([&] {
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      released.wait();
      --running;
      ++done;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (running.load() < static_cast<int>(kBound) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(running.load(), static_cast<int>(kBound));
  EXPECT_EQ(pool.threads(), kBound);
  release.set_value();
  pool.finish();
  EXPECT_EQ(done.load(), 1000);
  EXPECT_EQ(most.load(), static_cast<int>(kBound));
  EXPECT_EQ(pool.threads(), kBound);
}

// One connect at a time starts one thread, not the bound.
TEST(ConnectPool, ThreadsStartAsTheWorkNeedsThem) {
  ConnectPool pool(32);
  std::atomic<int> done{0};
  for (int i = 0; i < 3; ++i) {
    pool.post([&] { ++done; });
    pool.finish();
  }
  EXPECT_EQ(done.load(), 3);
  EXPECT_EQ(pool.threads(), 1u);
}

}  // namespace
}  // namespace hvdrun::launcher::remote
