// StragglerStats: how late each worker arrives at the collectives, from the ones every rank
// timed (every 8th of a generation, the same on every rank: CollectiveProgress). All ranks
// leave a collective together, so a rank that came late spent that much less time inside it
// than the first one: its lateness is the longest time inside, less its own. Per worker, over
// the job: how often it arrived last, its median and p99 lateness. Pure; the Job feeds it
// every second with the complete collectives and prints it at the end (and every --straggler-report
// S).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "launcher/job/collective_groups.h"

namespace hvdrun::launcher {

class StragglerStats {
 public:
  struct Row {
    std::uint32_t worker = 0;
    int rank = 0;  // its rank when last seen
    std::string host;
    std::size_t collectives = 0;  // timed on every rank
    std::size_t last = 0;         // of them, arrived last
    std::uint32_t median_us = 0;  // lateness
    std::uint32_t p99_us = 0;
  };

  // A collective every member timed (CollectiveGroups); an incomplete one says nothing.
  void add(const CollectiveGroup& group);
  // Collectives timed on every rank so far.
  std::size_t complete() const noexcept { return complete_; }
  // Every worker seen, latest first by median lateness.
  std::vector<Row> rows() const;
  // "stragglers, over 120 collectives timed on every rank: rank 1 (host a) arrived last in
  // 118 (98 %), late by 20.1 ms median, 20.9 ms p99; ..." for the `most` latest workers;
  // empty with nothing complete.
  std::string describe(std::size_t most) const;

 private:
  struct PerWorker {
    Row row;
    std::vector<std::uint32_t> lateness;  // the last kKept, a ring
    std::size_t next = 0;
  };
  std::map<std::uint32_t, PerWorker> workers_;
  std::size_t complete_ = 0;
};

}  // namespace hvdrun::launcher
