// CollectiveProgress: the few words each collective writes on entry and exit (its sequence
// number in the generation, kind, type and size, the time), read by the rendezvous client's
// heartbeat thread into a ProgressReport, so that the launcher can name the rank a stalled
// collective waits for. The hot path is relaxed atomic stores and two reads of the coarse
// clock; no lock.
// Device collectives are counted when enqueued on their stream.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "hvdrun/types.h"
#include "rendezvous/progress.h"
#include "worker-runtime/tcp/collective_check.h"

namespace hvdrun {

class CollectiveProgress {
 public:
  // The collective's thread, around each collective.
  void enter(tcp::CollectiveKind kind, DataType dtype, std::size_t bytes) noexcept;
  void leave() noexcept;
  // A new generation: numbering starts again at 1.
  void reset() noexcept;
  // Any thread (the heartbeat's): nullopt before the first collective of the generation.
  std::optional<rdzv::ProgressReport> report() const;
  // Every kSampleEvery-th collective of a generation (the same ones on every rank; every one
  // after time_every_collective()) is timed with the precise clock, for the launcher's
  // straggler report and timeline: the heartbeat thread takes those timed since its last call,
  // oldest first, at most rdzv::kMaxProgressSamples (the rest at its next call; a collective
  // overwritten in the ring before then is lost, which the launcher sees as a gap).
  static constexpr std::uint32_t kSampleEvery = 8;
  static constexpr std::size_t kSampleSlots = 2048;
  void time_every_collective() noexcept { every_ = 1; }
  std::vector<rdzv::TimedSample> take_samples();

 private:
  // One timed collective; `sequence` is 0 while the collective's thread writes the slot (a
  // reader that sees it change, or 0, skips the slot).
  struct Slot {
    std::atomic<std::uint32_t> sequence{0};
    std::atomic<std::uint32_t> inside_us{0};
    std::atomic<std::uint64_t> what{0};
    std::atomic<std::int64_t> entered_ns{0};
  };

  std::atomic<std::uint32_t> entered_{0};
  std::atomic<std::uint32_t> finished_{0};
  std::atomic<std::uint64_t> what_{0};  // rdzv::pack_collective
  std::atomic<std::int64_t> entered_ns_{0};
  std::atomic<std::int64_t> finished_ns_{0};
  std::uint32_t every_ = kSampleEvery;  // set before the first collective
  std::int64_t sample_start_ns_ = 0;    // the collective's thread only
  std::array<Slot, kSampleSlots> samples_{};
  // The generation's count of resets << 32 | the last sequence number take_samples() gave: a
  // take that overlaps a reset does not store an old generation's number into the new one.
  std::atomic<std::uint64_t> taken_{0};
};

// Enters on construction, leaves on destruction (also when the collective throws).
class ProgressScope {
 public:
  ProgressScope(CollectiveProgress& progress, tcp::CollectiveKind kind, DataType dtype,
                std::size_t bytes) noexcept
      : progress_(progress) {
    progress_.enter(kind, dtype, bytes);
  }
  ~ProgressScope() { progress_.leave(); }
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;

 private:
  CollectiveProgress& progress_;
};

}  // namespace hvdrun
