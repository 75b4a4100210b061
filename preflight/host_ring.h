// The preflight's allreduce among the probes of one host over TCP, for hosts without GPUs: the
// runtime's own ring (tcp::Ring) of the host's probes on loopback. It shows a host whose cores
// or memory are slower than the others' at what the job's workers do there.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker-runtime/tcp/socket.h"

namespace hvdrun::preflight {

struct RingPeer {
  int local_rank = 0;
  std::uint16_t port = 0;  // its listener on 127.0.0.1
};

struct RingFigure {
  std::optional<double> gbps;  // bus bandwidth of the fastest 4 MiB float allreduce
  std::string error;
};

// `peers`: the host's probes (this one included, with `listener`'s port), any order. Every
// probe of the host calls it; they repeat the allreduce for about `budget`; each wait is
// bounded by `limit`; `secret` authenticates the ring's links. Never throws.
RingFigure host_ring_allreduce(int local_rank, std::vector<RingPeer> peers, tcp::Listener listener,
                               const std::string& secret, std::chrono::milliseconds budget,
                               std::chrono::milliseconds limit);

}  // namespace hvdrun::preflight
