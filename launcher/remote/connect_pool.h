// ConnectPool: runs the hosts' connects (each blocks its thread: an SSH handshake, or the wait
// for an agent's own connection) on at most `max_threads` threads, started as the work needs
// them, in the order they were queued. finish() waits until every queued connect ran.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hvdrun::launcher::remote {

class ConnectPool {
 public:
  explicit ConnectPool(std::size_t max_threads) : max_threads_(max_threads) {}
  ~ConnectPool();  // finish(), then the threads end
  ConnectPool(const ConnectPool&) = delete;
  ConnectPool& operator=(const ConnectPool&) = delete;

  void post(std::function<void()> connect);
  void finish();
  std::size_t threads() const;

 private:
  void work();

  const std::size_t max_threads_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  std::size_t idle_ = 0;
  std::size_t running_ = 0;  // connects under way
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace hvdrun::launcher::remote
