// LoopProbe: measures how long the launcher's event loop is held by one handler (--verbose).
// A thread posts an empty handler to the io_context every `interval` and records how late it
// runs; the longest wait is the longest stall (to within the interval). Nothing is posted once
// stop() began, so the probe never keeps the loop from ending.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace hvdrun::launcher {

class LoopProbe {
 public:
  explicit LoopProbe(boost::asio::io_context& io,
                     std::chrono::milliseconds interval = std::chrono::milliseconds(10));
  ~LoopProbe();  // stop()
  LoopProbe(const LoopProbe&) = delete;
  LoopProbe& operator=(const LoopProbe&) = delete;

  // Ends the thread (call once the loop has returned, or from any thread); idempotent.
  void stop();
  std::chrono::microseconds longest() const;
  // "longest stall 1.2 ms; 0 over 50 ms (probed every 10 ms)"
  std::string summary() const;

 private:
  void run();

  boost::asio::io_context& io_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  bool pending_ = false;  // a probe handler is posted and has not run
  std::chrono::microseconds longest_{0};
  std::size_t over_50ms_ = 0;
  std::thread thread_;  // last: started when everything above exists
};

}  // namespace hvdrun::launcher
