// The cost of hang forensics' bookkeeping on a collective: one ProgressScope (enter and leave,
// collective_progress.h) around nothing, timed over many calls, in ns per collective; the
// driver (forensics.sh) sets it against the 4 KiB allreduce latency measured in the same run.
// With `every`, each collective is timed precisely, as under --timeline-collectives (the
// samples are taken every 1024 calls, as a heartbeat would).
// usage: progress_bench [calls=20000000] [every]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "worker-runtime/collective_progress.h"

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 20'000'000;
  const bool every = argc > 2 && std::string(argv[2]) == "every";
  hvdrun::CollectiveProgress progress;
  if (every) progress.time_every_collective();
  std::size_t taken = 0;
  constexpr int kReps = 5;
  double best = 1e9;
  for (int rep = 0; rep < kReps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      {
        hvdrun::ProgressScope scope(progress, hvdrun::tcp::CollectiveKind::kAllreduce,
                                    hvdrun::DataType::kFloat32, 4096);
      }
      if (every && i % 1024 == 1023) taken += progress.take_samples().size();
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        static_cast<double>(calls);
    if (ns < best) best = ns;
  }
  const auto report = progress.report();
  if (!report || report->entered != static_cast<std::uint32_t>(calls * kReps) ||
      report->waiting() || (every && taken == 0)) {
    std::fprintf(stderr, "progress_bench: the counter is wrong\n");
    return 1;
  }
  std::printf("%.1f\n", best);
  return 0;
}
