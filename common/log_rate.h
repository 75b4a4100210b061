// LogRate: one kind of log line at most once per interval, so that a flood of events (garbage
// connections, a limit hit in a loop) cannot flood the log. admit() counts an event and says
// whether to log it now, with how many were held back since the last line. Pure state; one
// thread at a time.
#pragma once

#include <chrono>
#include <cstdint>

namespace hvdrun {

class LogRate {
 public:
  using Clock = std::chrono::steady_clock;

  LogRate() = default;  // one second
  explicit LogRate(Clock::duration interval) : interval_(interval) {}

  // Counts an event. True when a line may be logged now; `held_back` is then the number of
  // events not logged since the previous line.
  bool admit(std::uint64_t& held_back, Clock::time_point now = Clock::now()) {
    ++hits_;
    if (logged_ && now - last_ < interval_) {
      ++held_back_;
      return false;
    }
    held_back = held_back_;
    held_back_ = 0;
    last_ = now;
    logged_ = true;
    return true;
  }
  std::uint64_t hits() const noexcept { return hits_; }
  // Events not logged since the last line.
  std::uint64_t held_back() const noexcept { return held_back_; }

 private:
  Clock::duration interval_ = std::chrono::seconds(1);
  std::uint64_t hits_ = 0;
  std::uint64_t held_back_ = 0;
  Clock::time_point last_{};
  bool logged_ = false;
};

}  // namespace hvdrun
