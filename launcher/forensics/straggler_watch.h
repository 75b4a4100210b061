// StragglerWatch: --exclude-stragglers' decision. Over the last kWindow collectives of the
// current generation that every member timed, one worker arrived last in at least
// kLastShare of them, late by at least the margin at the median: that worker (and its host) is
// persistently the slowest. A new generation starts a new window. Pure; the Job feeds it the
// complete collectives every second.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "launcher/job/collective_groups.h"

namespace hvdrun::launcher {

class StragglerWatch {
 public:
  static constexpr std::size_t kWindow = 24;
  static constexpr double kLastShare = 0.75;

  struct Verdict {
    std::uint32_t worker = 0;
    int rank = 0;
    std::string host;
    std::size_t last = 0;  // of the window, arrived last
    std::chrono::microseconds median_lateness{0};
    // "rank 2 (host h2) arrived last in 22 of the last 24 collectives timed on every rank, late
    // by 35.2 ms at the median"
    std::string describe() const;
  };

  explicit StragglerWatch(std::chrono::microseconds margin) : margin_(margin) {}
  void add(const CollectiveGroup& group);
  // The straggler, once the window is full and one worker is persistently the slowest.
  std::optional<Verdict> verdict() const;
  // A straggler was acted on in `generation`: its collectives, and those of earlier ones, no
  // longer count; the window starts again empty.
  void start_after(std::uint32_t generation);

 private:
  struct Entry {
    std::uint32_t last_worker = 0;
    int rank = 0;
    std::string host;
    std::uint32_t lateness_us = 0;  // of the last to arrive, behind the first
  };
  std::chrono::microseconds margin_;
  std::uint32_t generation_ = 0;
  std::deque<Entry> window_;
};

}  // namespace hvdrun::launcher
