// ProgressReport: what a worker's collectives are doing, as its heartbeats tell the launcher
// (hang forensics: which rank waits in which collective, which has not entered it). The worker
// fills it on its heartbeat thread from a few words its collectives write (CollectiveProgress
// in worker-runtime/); times are relative (milliseconds ago), so hosts need no common clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hvdrun::rdzv {

inline constexpr std::uint32_t kMaxProgressText = 128;
inline constexpr std::uint32_t kMaxProgressSamples = 1024;

// A collective timed with the precise clock (every 8th of a generation, the same on every rank;
// every one when the launcher draws them in its timeline).
struct TimedSample {
  std::uint32_t sequence = 0;   // its number in the generation
  std::uint32_t inside_us = 0;  // how long the worker was inside it
  std::uint32_t ago_us = 0;     // how long before the heartbeat it entered it
  std::uint64_t what = 0;       // kind | dtype << 8 | bytes << 16 (collective_names.h)
  bool operator==(const TimedSample&) const = default;
};

struct ProgressReport {
  std::uint32_t entered = 0;          // sequence number in the generation of the last
                                      // collective entered (0: none yet)
  std::uint32_t finished = 0;         // of the last one finished
  std::uint32_t in_ms = 0;            // how long it has waited in `entered`, if it still does
  std::uint32_t finished_ago_ms = 0;  // since `finished` ended (when finished > 0)
  std::string what;                   // the last entered: "allreduce (float32, 4.0 MiB)"
  // Collectives timed precisely since the last heartbeat, oldest first (the straggler report,
  // the timeline): CollectiveProgress::take_samples().
  std::vector<TimedSample> samples{};

  bool waiting() const noexcept { return entered > finished; }
  bool operator==(const ProgressReport&) const = default;
};

// One timed collective of a member of the current generation, as the launcher takes it from
// the rendezvous server (the straggler report, the timeline).
struct TimedCollective {
  std::uint32_t worker = 0;  // its key
  int rank = 0;
  std::string host;
  std::uint32_t generation = 0;
  std::uint32_t sequence = 0;                       // the collective's number in the generation
  std::uint32_t inside_us = 0;                      // how long the member was inside it
  std::uint64_t what = 0;                           // kind, type and size (collective_names.h)
  std::chrono::steady_clock::time_point entered{};  // when it entered, on this machine's clock
};

}  // namespace hvdrun::rdzv
