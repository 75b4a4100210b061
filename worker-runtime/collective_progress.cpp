// CollectiveProgress (collective_progress.h).
#include "worker-runtime/collective_progress.h"

#include <time.h>

#include <algorithm>

#include "rendezvous/collective_names.h"

namespace hvdrun {
namespace {

// The coarse monotonic clock (a few ms of resolution, a few ns to read): stalls are seconds.
std::int64_t now_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

std::int64_t precise_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

std::uint32_t ms_between(std::int64_t from_ns, std::int64_t to_ns) {
  const auto ms = (to_ns - from_ns) / 1'000'000;
  if (ms <= 0) return 0;
  return ms > 0xFFFF'FFFFLL ? 0xFFFF'FFFFu : static_cast<std::uint32_t>(ms);
}

}  // namespace

void CollectiveProgress::enter(tcp::CollectiveKind kind, DataType dtype,
                               std::size_t bytes) noexcept {
  what_.store(rdzv::pack_collective(static_cast<std::uint8_t>(kind),
                                    static_cast<std::uint8_t>(dtype), bytes),
              std::memory_order_relaxed);
  entered_ns_.store(now_ns(), std::memory_order_relaxed);
  const std::uint32_t seq = entered_.fetch_add(1, std::memory_order_release) + 1;
  sample_start_ns_ = seq % every_ == 0 ? precise_ns() : 0;
}

void CollectiveProgress::leave() noexcept {
  finished_ns_.store(now_ns(), std::memory_order_relaxed);
  const std::uint32_t seq = entered_.load(std::memory_order_relaxed);
  if (sample_start_ns_ != 0) {
    const std::int64_t us = (precise_ns() - sample_start_ns_) / 1000;
    Slot& slot = samples_[(seq / every_) % kSampleSlots];
    slot.sequence.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    slot.inside_us.store(us < 0               ? 0
                         : us > 0xFFFF'FFFFLL ? 0xFFFF'FFFFu
                                              : us,
                         std::memory_order_relaxed);
    slot.what.store(what_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    slot.entered_ns.store(sample_start_ns_, std::memory_order_relaxed);
    slot.sequence.store(seq, std::memory_order_release);
    sample_start_ns_ = 0;
  }
  finished_.store(seq, std::memory_order_release);
}

void CollectiveProgress::reset() noexcept {
  entered_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  for (auto& slot : samples_) slot.sequence.store(0, std::memory_order_relaxed);
  const std::uint64_t resets = (taken_.load(std::memory_order_relaxed) >> 32) + 1;
  taken_.store(resets << 32, std::memory_order_release);
}

std::vector<rdzv::TimedSample> CollectiveProgress::take_samples() {
  std::uint64_t taken = taken_.load(std::memory_order_acquire);
  const auto after = static_cast<std::uint32_t>(taken);
  const std::int64_t now = precise_ns();
  std::vector<rdzv::TimedSample> out;
  for (const Slot& slot : samples_) {
    const std::uint32_t seq = slot.sequence.load(std::memory_order_acquire);
    if (seq <= after) continue;
    rdzv::TimedSample sample;
    sample.sequence = seq;
    sample.inside_us = slot.inside_us.load(std::memory_order_relaxed);
    sample.what = slot.what.load(std::memory_order_relaxed);
    const std::int64_t entered = slot.entered_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.sequence.load(std::memory_order_relaxed) != seq) continue;  // rewritten meanwhile
    const std::int64_t ago = (now - entered) / 1000;
    sample.ago_us = ago < 0 ? 0 : ago > 0xFFFF'FFFFLL ? 0xFFFF'FFFFu : ago;
    out.push_back(sample);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
  if (out.size() > rdzv::kMaxProgressSamples) out.resize(rdzv::kMaxProgressSamples);
  if (!out.empty()) {
    const std::uint64_t next = (taken >> 32) << 32 | out.back().sequence;
    if (!taken_.compare_exchange_strong(taken, next, std::memory_order_acq_rel)) {
      return {};  // a new generation began meanwhile: these samples are the old one's
    }
  }
  return out;
}

std::optional<rdzv::ProgressReport> CollectiveProgress::report() const {
  rdzv::ProgressReport r;
  r.entered = entered_.load(std::memory_order_acquire);
  if (r.entered == 0) return std::nullopt;
  r.finished = finished_.load(std::memory_order_acquire);
  const auto now = now_ns();
  r.in_ms = ms_between(entered_ns_.load(std::memory_order_relaxed), now);
  r.finished_ago_ms = ms_between(finished_ns_.load(std::memory_order_relaxed), now);
  r.what = rdzv::describe_collective(what_.load(std::memory_order_relaxed));
  if (r.what.size() > rdzv::kMaxProgressText) r.what.resize(rdzv::kMaxProgressText);
  return r;
}

}  // namespace hvdrun
