// The preflight's allreduce among one host's probes (host_ring.h).
#include "preflight/host_ring.h"

#include <algorithm>
#include <exception>

#include "worker-runtime/tcp/ring.h"

namespace hvdrun::preflight {

RingFigure host_ring_allreduce(int local_rank, std::vector<RingPeer> peers, tcp::Listener listener,
                               const std::string& secret, std::chrono::milliseconds budget,
                               std::chrono::milliseconds limit) {
  RingFigure figure;
  std::sort(peers.begin(), peers.end(),
            [](const RingPeer& a, const RingPeer& b) { return a.local_rank < b.local_rank; });
  const int size = static_cast<int>(peers.size());
  const auto me = std::find_if(peers.begin(), peers.end(),
                               [&](const RingPeer& p) { return p.local_rank == local_rank; });
  if (size < 2 || me == peers.end()) {
    figure.error = size < 2 ? "one slot" : "this probe is not among its host's";
    return figure;
  }
  try {
    const auto at = [&](std::ptrdiff_t i) {
      return rdzv::PeerAddr{"127.0.0.1", peers[static_cast<std::size_t>((i + size) % size)].port};
    };
    const std::ptrdiff_t place = me - peers.begin();
    tcp::Ring ring(static_cast<int>(place), size, {at(place), at(place - 1), at(place + 1)},
                   std::move(listener), secret, 1, limit);
    constexpr std::size_t count = std::size_t{1} << 20;  // 4 MiB of floats
    std::vector<float> data(count, 1.0f);
    double best = 0;
    // Repeated for about `budget`, the fastest counting: the host's cores may be busy for a
    // moment. The ring's first probe says when to stop, so that all make as many calls.
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0;; ++i) {
      const auto begin = std::chrono::steady_clock::now();
      ring.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
      const double took =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      if (i > 0 && took > 0) best = best == 0 ? took : std::min(best, took);  // 1st warms up
      std::uint8_t more = i < 3 || std::chrono::steady_clock::now() - start < budget;
      ring.broadcast(&more, 1, DataType::kUInt8, 0);
      if (!more) break;
    }
    if (best <= 0) throw std::runtime_error("no allreduce was timed");
    const double bytes = static_cast<double>(count * sizeof(float));
    figure.gbps = bytes * 2.0 * (size - 1) / size / best / 1e9;
  } catch (const std::exception& e) {
    figure.error = e.what();
  }
  return figure;
}

}  // namespace hvdrun::preflight
