// NoteRate: notes that may come in floods (a signal sent a thousand times, each forwarded):
// the first of each kind is said at once, then at most one a second, each saying how many of
// its kind were not said since the last; flush() says what is still held. Thread: its owner's.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

namespace hvdrun::launcher {

class NoteRate {
 public:
  using Clock = std::chrono::steady_clock;

  explicit NoteRate(std::chrono::milliseconds interval = std::chrono::seconds(1))
      : interval_(interval) {}

  // `text` as a note, unless one of `kind` was said less than the interval ago (it is then
  // counted, and the latest text kept).
  void note(const std::string& kind, const std::string& text, Clock::time_point now = Clock::now());
  // For each kind with notes not said: the latest, with how many were held.
  void flush();

 private:
  struct Kind {
    Clock::time_point said{};
    std::size_t held = 0;
    std::string latest;
  };
  void say(Kind& kind, const std::string& text, Clock::time_point now);

  std::chrono::milliseconds interval_;
  std::map<std::string, Kind> kinds_;
};

}  // namespace hvdrun::launcher
