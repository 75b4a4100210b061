// LoopProbe (loop_probe.h): a thread timing empty handlers through the event loop.
#include "launcher/run/loop_probe.h"

#include <boost/asio/post.hpp>
#include <cstdio>
#include <string>

namespace hvdrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

LoopProbe::LoopProbe(boost::asio::io_context& io, std::chrono::milliseconds interval)
    : io_(io), interval_(interval), thread_([this] { run(); }) {}

LoopProbe::~LoopProbe() {
  stop();
}

void LoopProbe::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void LoopProbe::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto posted = Clock::now();
    pending_ = true;
    boost::asio::post(io_, [this, posted] {
      const auto waited =
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - posted);
      {
        std::lock_guard inner(mutex_);
        pending_ = false;
        if (waited > longest_) longest_ = waited;
        if (waited > std::chrono::milliseconds(50)) ++over_50ms_;
      }
      changed_.notify_all();
    });
    // Until it ran (however long the loop is held), then one interval.
    changed_.wait(lock, [this] { return stop_ || !pending_; });
    changed_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

std::chrono::microseconds LoopProbe::longest() const {
  std::lock_guard lock(mutex_);
  return longest_;
}

std::string LoopProbe::summary() const {
  std::lock_guard lock(mutex_);
  char text[128];
  std::snprintf(text, sizeof text, "longest stall %.1f ms; %zu over 50 ms (probed every %lld ms)",
                static_cast<double>(longest_.count()) / 1000.0, over_50ms_,
                static_cast<long long>(interval_.count()));
  return text;
}

}  // namespace hvdrun::launcher
