// find_stall(): from what each member of a generation last said of its collectives (its
// heartbeats), whether a collective has waited longer than the stall timeout, on which ranks,
// and which ranks have not entered it, with what each did last. Pure; the hang watch asks it every
// second and says each stall once (hang_watch.h; Horovod's stall inspector, for every program on libhvdrun).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/server.h"

namespace hvdrun::launcher {

struct Stall {
  std::uint32_t sequence = 0;          // the collective's number in the generation
  std::string what;                    // "allreduce (float32, 4.0 MiB)"
  std::chrono::milliseconds waited{};  // the longest any rank has waited in it
  std::vector<int> waiting;            // ranks in it
  std::size_t size = 0;                // ranks in the generation
  // The members that have not entered it (every member if none did), by rank.
  std::vector<rdzv::MemberProgress> missing;

  // "allreduce #1234 (float32, 4.0 MiB) waits 60 s on 7 of 8 ranks; rank 3 (host node2,
  // pid 4321) has not entered it: its last collective, #1233, ended 61 s ago"
  std::string describe() const;
  // The ranks that have not entered it, or the waiting ones if every rank entered.
  std::vector<int> culprits() const;
};

// A collective some member has waited in for at least `timeout`: the one with the highest
// sequence number any member entered. Nothing when no member waits that long.
std::optional<Stall> find_stall(const std::vector<rdzv::MemberProgress>& members,
                                std::chrono::milliseconds timeout);

}  // namespace hvdrun::launcher
