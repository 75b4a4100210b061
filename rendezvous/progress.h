// ProgressReport: what a worker's collectives are doing, as its heartbeats tell the launcher
// (hang forensics: which rank waits in which collective, which has not entered it). The worker
// fills it on its heartbeat thread from a few words its collectives write (CollectiveProgress
// in worker-runtime/); times are relative (milliseconds ago), so hosts need no common clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvdrun::rdzv {

inline constexpr std::uint32_t kMaxProgressText = 128;
inline constexpr std::uint32_t kMaxProgressSamples = 128;

struct ProgressReport {
  std::uint32_t entered = 0;          // sequence number in the generation of the last
                                      // collective entered (0: none yet)
  std::uint32_t finished = 0;         // of the last one finished
  std::uint32_t in_ms = 0;            // how long it has waited in `entered`, if it still does
  std::uint32_t finished_ago_ms = 0;  // since `finished` ended (when finished > 0)
  std::string what;                   // the last entered: "allreduce (float32, 4.0 MiB)"
  // Collectives timed precisely since the last heartbeat, for the straggler report: sequence
  // number << 32 | microseconds inside it (CollectiveProgress::take_samples()).
  std::vector<std::uint64_t> samples{};

  bool waiting() const noexcept { return entered > finished; }
  bool operator==(const ProgressReport&) const = default;
};

}  // namespace hvdrun::rdzv
