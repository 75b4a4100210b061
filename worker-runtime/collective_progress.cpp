// CollectiveProgress (collective_progress.h).
#include "worker-runtime/collective_progress.h"

#include <time.h>

#include <algorithm>
#include <cstdio>

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
  constexpr std::uint64_t kMaxBytes = (std::uint64_t{1} << 48) - 1;
  const std::uint64_t size = bytes > kMaxBytes ? kMaxBytes : bytes;
  what_.store(
      static_cast<std::uint64_t>(kind) | static_cast<std::uint64_t>(dtype) << 8 | size << 16,
      std::memory_order_relaxed);
  entered_ns_.store(now_ns(), std::memory_order_relaxed);
  const std::uint32_t seq = entered_.fetch_add(1, std::memory_order_release) + 1;
  sample_start_ns_ = seq % kSampleEvery == 0 ? precise_ns() : 0;
}

void CollectiveProgress::leave() noexcept {
  finished_ns_.store(now_ns(), std::memory_order_relaxed);
  const std::uint32_t seq = entered_.load(std::memory_order_relaxed);
  if (sample_start_ns_ != 0) {
    const std::int64_t us = (precise_ns() - sample_start_ns_) / 1000;
    const std::uint64_t inside = us < 0 ? 0 : us > 0xFFFF'FFFFLL ? 0xFFFF'FFFFu : us;
    samples_[(seq / kSampleEvery) % kSampleSlots].store(std::uint64_t{seq} << 32 | inside,
                                                        std::memory_order_release);
    sample_start_ns_ = 0;
  }
  finished_.store(seq, std::memory_order_release);
}

void CollectiveProgress::reset() noexcept {
  entered_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  for (auto& slot : samples_) slot.store(0, std::memory_order_relaxed);
  taken_.store(0, std::memory_order_relaxed);
}

std::vector<std::uint64_t> CollectiveProgress::take_samples() {
  const std::uint32_t after = taken_.load(std::memory_order_relaxed);
  std::vector<std::uint64_t> out;
  for (const auto& slot : samples_) {
    const std::uint64_t sample = slot.load(std::memory_order_acquire);
    if ((sample >> 32) > after) out.push_back(sample);
  }
  std::sort(out.begin(), out.end());
  if (!out.empty()) taken_.store(static_cast<std::uint32_t>(out.back() >> 32));
  return out;
}

std::optional<rdzv::ProgressReport> CollectiveProgress::report() const {
  rdzv::ProgressReport r;
  r.entered = entered_.load(std::memory_order_acquire);
  if (r.entered == 0) return std::nullopt;
  r.finished = finished_.load(std::memory_order_acquire);
  const std::uint64_t what = what_.load(std::memory_order_relaxed);
  const auto now = now_ns();
  r.in_ms = ms_between(entered_ns_.load(std::memory_order_relaxed), now);
  r.finished_ago_ms = ms_between(finished_ns_.load(std::memory_order_relaxed), now);
  const auto kind = static_cast<tcp::CollectiveKind>(what & 0xFF);
  r.what = std::string(tcp::kind_name(kind));
  if (kind != tcp::CollectiveKind::kBarrier) {
    r.what += " (" + std::string(to_string(static_cast<DataType>((what >> 8) & 0xFF))) + ", " +
              describe_bytes(what >> 16) + ")";
  }
  if (r.what.size() > rdzv::kMaxProgressText) r.what.resize(rdzv::kMaxProgressText);
  return r;
}

std::string describe_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace hvdrun
