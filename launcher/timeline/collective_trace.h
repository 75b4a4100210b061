// CollectiveTrace: libhvdrun's collectives in the --timeline (--timeline-collectives), each a
// span on its worker's track: kind, type and size, and for a collective every member timed,
// how long this worker waited for the others and how long the transfer took. Bounded per
// worker (--timeline-rank-events); at the end, each worker's track says how many collectives
// were left out for that bound and how many never reached the launcher (gaps in their
// numbers: a ring overwritten before a heartbeat took it, a worker killed). io thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "launcher/job/collective_groups.h"
#include "launcher/timeline/timeline.h"

namespace hvdrun::launcher {

class CollectiveTrace {
 public:
  CollectiveTrace(Timeline& timeline, std::size_t per_worker)
      : timeline_(timeline), cap_(per_worker) {}

  // The track (timeline pid and tid) of worker `key`'s collectives.
  void track(std::uint32_t key, int pid, int tid);
  void add(const CollectiveGroup& group);
  // Per worker with collectives left out: how many, and why.
  void close();

 private:
  struct Track {
    int pid = 0, tid = 0;
    std::size_t drawn = 0, capped = 0;
    std::map<std::uint32_t, std::pair<std::uint32_t, std::size_t>> seen;  // generation ->
                                                                          // (highest #, count)
  };
  Timeline& timeline_;
  std::size_t cap_;
  std::map<std::uint32_t, Track> tracks_;  // by worker key
};

}  // namespace hvdrun::launcher
