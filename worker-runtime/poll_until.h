// poll_until: the completion loop of device work (NCCL calls, CUDA events): calls `done` until
// it returns true, the deadline passes, or the abort signal is raised. Spins for the first
// 50 us (small collectives finish within microseconds), then yields, then sleeps 50 us
// between polls. Header-only so that its decisions are unit-tested without a GPU.
#pragma once

#include <chrono>
#include <thread>

#include "worker-runtime/abort_signal.h"

namespace hvdrun {

enum class PollResult { kDone, kTimedOut, kAborted };

template <class Done>
PollResult poll_until(std::chrono::steady_clock::time_point deadline, const AbortSignal* abort,
                      Done&& done) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  while (!done()) {
    if (abort != nullptr && abort->raised()) return PollResult::kAborted;
    const auto now = steady_clock::now();
    if (now >= deadline) return PollResult::kTimedOut;
    if (now - start < microseconds(50)) continue;
    if (now - start < milliseconds(2)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(microseconds(50));
    }
  }
  return PollResult::kDone;
}

}  // namespace hvdrun
