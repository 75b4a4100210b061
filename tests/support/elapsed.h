// Seconds since a steady-clock instant, for messages and bounds in tests.
#pragma once

#include <chrono>

namespace hvdrun::test {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace hvdrun::test
