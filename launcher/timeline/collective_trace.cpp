// CollectiveTrace (collective_trace.h).
#include "launcher/timeline/collective_trace.h"

#include <algorithm>
#include <string>

#include "rendezvous/collective_names.h"

namespace hvdrun::launcher {

void CollectiveTrace::track(std::uint32_t key, int pid, int tid) {
  Track& t = tracks_[key];
  t.pid = pid;
  t.tid = tid;
}

void CollectiveTrace::add(const CollectiveGroup& group) {
  for (const auto& m : group.members) {
    const auto found = tracks_.find(m.worker);
    if (found == tracks_.end()) continue;  // a worker the job never started: nothing to draw on
    Track& t = found->second;
    auto& [highest, count] = t.seen[m.generation];
    highest = std::max(highest, m.sequence);
    ++count;
    if (t.drawn >= cap_) {
      ++t.capped;
      continue;
    }
    ++t.drawn;
    Timeline::Args args{{"sequence", std::to_string(m.sequence)},
                        {"generation", std::to_string(m.generation)},
                        {"rank", std::to_string(m.rank)},
                        {"bytes", std::to_string(rdzv::packed_bytes(m.what))}};
    if (rdzv::packed_kind(m.what) != rdzv::kBarrierKind) {
      args.emplace_back("dtype", std::string(rdzv::dtype_name(rdzv::packed_dtype(m.what))));
    }
    if (group.complete) {
      args.emplace_back("wait_us", std::to_string(group.wait_us(m)));
      args.emplace_back("transfer_us", std::to_string(group.transfer_us()));
    } else {
      args.emplace_back("wait_us", "unknown: not every member's time came");
    }
    timeline_.span(t.pid, t.tid, rdzv::describe_collective(m.what), "collective", m.entered,
                   m.entered + std::chrono::microseconds(m.inside_us), args);
  }
}

void CollectiveTrace::close() {
  for (const auto& [key, t] : tracks_) {
    std::size_t lost = 0;
    for (const auto& [generation, seen] : t.seen)
      lost += seen.first - std::min<std::size_t>(seen.first, seen.second);
    if (t.capped == 0 && lost == 0) continue;
    timeline_.instant(t.pid, t.tid, "collectives left out", "collective", Timeline::Clock::now(),
                      {{"drawn", std::to_string(t.drawn)},
                       {"over_the_bound", std::to_string(t.capped)},
                       {"bound", std::to_string(cap_)},
                       {"never_received", std::to_string(lost)}});
  }
}

}  // namespace hvdrun::launcher
