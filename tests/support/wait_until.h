// wait_until: a test waits for the state it needs, never for a fixed time. Polls `ready` every
// few milliseconds until it holds or `timeout` has passed; returns whether it held (the caller
// asserts on that, naming what it waited for).
#pragma once

#include <chrono>
#include <thread>

namespace hvdrun::test {

template <typename Predicate>
bool wait_until(Predicate ready, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace hvdrun::test
