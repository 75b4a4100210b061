// What the rendezvous scale benchmark's processes share (rendezvous_scale_bench.cpp): the
// clocks every process reports on, each simulated worker's slot and data address as the server
// is told to expect them, the report lines to the parent.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/slot.h"
#include "common/unique_fd.h"
#include "rendezvous/protocol.h"

namespace hvdrun::bench::scale {

namespace rdzv = hvdrun::rdzv;
using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one time line for every process

constexpr int kSlotsPerHost = 8;
constexpr int kLanes = 256;                 // connections a client process opens at once
constexpr std::chrono::seconds kWait{300};  // for any one report of a child

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// CPU time this process used so far (user and system), in ns.
inline std::int64_t cpu_ns() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto ns = [](const timeval& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_usec * 1000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

inline hvdrun::Slot slot_of(int rank, int n) {
  const int host = rank / kSlotsPerHost;
  const int hosts = (n + kSlotsPerHost - 1) / kSlotsPerHost;
  const int local_size = std::min(kSlotsPerHost, n - host * kSlotsPerHost);
  return {rank,
          rank % kSlotsPerHost,
          local_size,
          host,
          hosts,
          host,
          hosts,
          static_cast<std::size_t>(host),
          "host-" + std::to_string(host)};
}

// Each simulated worker advertises a data listener of its own (nothing listens there).
inline rdzv::PeerAddr data_of(int rank) {
  return {"10." + std::to_string(rank >> 16) + "." + std::to_string((rank >> 8) & 255) + "." +
              std::to_string(rank & 255),
          static_cast<std::uint16_t>(1024 + rank % 60000)};
}

inline void report(int fd, const std::string& line) {
  if (hvdrun::write_all(fd, line + "\n") != 0) std::_Exit(3);
}

}  // namespace hvdrun::bench::scale
