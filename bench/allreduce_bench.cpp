// hvdrun::allreduce float32 sum bandwidth, measured like shared peers' MPI benchmark so the
// two tables compare row by row (nccl-tests definitions: algbw = bytes / time,
// busbw = algbw * 2(n-1)/n). For each size, k doubles until one batch of k calls lasts
// >= seconds/kReps (these batches are the warm-up), then kReps batches are timed; the
// per-call time of a batch is the max over ranks. The result is checked.
// usage: hvdrun -np 2 build/bench/allreduce_bench [seconds_per_size=1.0] [max_bytes]
#include <hvdrun/hvdrun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kReps = 5;

double batch(const std::vector<float>& in, std::vector<float>& out, std::size_t count, int k) {
  hvdrun::barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < k; ++i) {
    hvdrun::allreduce(in.data(), out.data(), count, hvdrun::DataType::kFloat32,
                      hvdrun::ReduceOp::kSum);
  }
  double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / k;
  hvdrun::allreduce(&mine, &mine, 1, hvdrun::DataType::kFloat64, hvdrun::ReduceOp::kMax);
  return mine;
}

}  // namespace

int main(int argc, char** argv) {
  hvdrun::InitGuard hvd;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  const std::size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (256u << 20);
  const int n = hvdrun::size();
  const std::size_t sizes[] = {4u << 10, 64u << 10, 1u << 20, 16u << 20, 64u << 20, 256u << 20};
  std::vector<float> in(max_bytes / sizeof(float), 1.0f), out(in.size(), 0.0f);
  if (hvdrun::rank() == 0) {
    std::printf("# ranks=%d float32 sum, out-of-place, %d batches per size\n", n, kReps);
    std::printf("# %11s %7s %12s %12s %11s %11s %11s\n", "bytes", "k", "med_us", "min_us",
                "algbw_GB/s", "busbw_GB/s", "best_busbw");
  }
  for (std::size_t bytes : sizes) {
    if (bytes > max_bytes) break;
    const std::size_t count = bytes / sizeof(float);
    int k = 1;
    while (batch(in, out, count, k) * k < seconds / kReps && k < (1 << 22)) k *= 2;
    std::vector<double> t(kReps);
    for (double& v : t) v = batch(in, out, count, k);
    std::sort(t.begin(), t.end());
    int bad = std::any_of(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(count),
                          [n](float v) { return v != static_cast<float>(n); });
    hvdrun::allreduce(&bad, &bad, 1, hvdrun::DataType::kInt32, hvdrun::ReduceOp::kMax);
    if (hvdrun::rank() == 0) {
      const double f = 2.0 * (n - 1) / n, med = t[kReps / 2];
      std::printf("  %11zu %7d %12.1f %12.1f %11.3f %11.3f %11.3f%s\n", bytes, k, med * 1e6,
                  t[0] * 1e6, static_cast<double>(bytes) / med / 1e9,
                  static_cast<double>(bytes) / med / 1e9 * f,
                  static_cast<double>(bytes) / t[0] / 1e9 * f, bad ? "  WRONG RESULT" : "");
      std::fflush(stdout);
    }
  }
  return 0;
}
