// hvdrun's device allreduce against raw ncclAllReduce on hvdrun's own communicator, on one
// GPU (np=1): float32 sum, 8 B to 1 GiB. hvdrun's call returns after completion, so the
// like-for-like baseline is ncclAllReduce + cudaStreamSynchronize per call ("raw"); the
// pipelined column (k enqueues, one synchronize) is the floor without per-call completion.
// Batches alternate hvdrun/raw; each size reports the median of kReps batches. Bus bandwidth
// follows nccl-tests (busbw = algbw * 2(n-1)/n, 0 for one rank, so algbw is shown too).
// Then fusion: 256 tensors of 16 KiB (also 1024 x 1 KiB, 64 x 256 KiB, 16 x 4 MiB),
// allreduce_many (mode from HVDRUN_FUSION_MODE) against one hvdrun::allreduce per tensor and a
// raw ncclGroupStart/End of one ncclAllReduce per tensor.
// usage: hvdrun -np 1 build/bench/nccl_bench [--fusion-only] [max_bytes=1073741824]
// Exit 77 with a message when no CUDA device is visible.
#include <cuda_runtime.h>
#include <hvdrun/hvdrun.h>
#include <nccl.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReps = 7;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "nccl_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Raw NCCL calls on hvdrun's non-blocking communicator: settle ncclInProgress.
void settle(ncclResult_t r, ncclComm_t comm) {
  while (r == ncclInProgress) ncclCommGetAsyncError(comm, &r);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "nccl_bench: NCCL: %s\n", ncclGetErrorString(r));
    std::exit(1);
  }
}

// Seconds per call of `k` calls of `op`, ended by `finish`.
double per_call(int k, const std::function<void()>& op, const std::function<void()>& finish) {
  const auto t0 = Clock::now();
  for (int i = 0; i < k; ++i) op();
  finish();
  return std::chrono::duration<double>(Clock::now() - t0).count() / k;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Device {
  void* send = nullptr;
  void* recv = nullptr;
  cudaStream_t stream = nullptr;
  explicit Device(std::size_t bytes) {
    check(cudaMalloc(&send, bytes), "cudaMalloc");
    check(cudaMalloc(&recv, bytes), "cudaMalloc");
    check(cudaMemset(send, 0, bytes), "cudaMemset");
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  }
  ~Device() {
    cudaStreamDestroy(stream);
    cudaFree(send);
    cudaFree(recv);
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
};

void sweep(std::size_t max_bytes, ncclComm_t comm) {
  const int n = hvdrun::size();
  Device d(max_bytes);
  const double f = 2.0 * (n - 1) / n;
  std::printf("# allreduce float32 sum, %d rank(s), median of %d alternating batches\n", n, kReps);
  std::printf("# %11s %6s %10s %10s %10s %9s %8s %10s %10s\n", "bytes", "k", "hvdrun_us", "raw_us",
              "pipe_us", "added_us", "ratio", "algbw_GB/s", "busbw_GB/s");
  for (std::size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
    const std::size_t count = bytes / sizeof(float);
    const auto hvd = [&] {
      hvdrun::allreduce(d.send, d.recv, count, hvdrun::DataType::kFloat32, hvdrun::ReduceOp::kSum,
                        d.stream);
    };
    const auto raw = [&] {
      settle(ncclAllReduce(d.send, d.recv, count, ncclFloat32, ncclSum, comm, d.stream), comm);
    };
    const auto sync = [&] { check(cudaStreamSynchronize(d.stream), "sync"); };
    const auto raw_synced = [&] {
      raw();
      sync();
    };
    int k = 1;
    while (per_call(k, hvd, [] {}) * k < 0.002 && k < (1 << 16)) k *= 2;
    std::vector<double> th, tr, tp;
    for (int rep = 0; rep < kReps; ++rep) {
      th.push_back(per_call(k, hvd, [] {}));
      tr.push_back(per_call(k, raw_synced, [] {}));
      tp.push_back(per_call(k, raw, sync));
    }
    const double h = median(th), r = median(tr), p = median(tp);
    std::printf("  %11zu %6d %10.2f %10.2f %10.2f %9.2f %8.3f %10.2f %10.2f\n", bytes, k, h * 1e6,
                r * 1e6, p * 1e6, (h - r) * 1e6, r / h, static_cast<double>(bytes) / h / 1e9,
                static_cast<double>(bytes) / h / 1e9 * f);
  }
}

void fusion(ncclComm_t comm, int tensor_count, std::size_t tensor_bytes) {
  const std::size_t count = tensor_bytes / sizeof(float);
  Device d(tensor_count * count * sizeof(float));
  std::vector<hvdrun::DeviceTensor> tensors;
  for (int i = 0; i < tensor_count; ++i) {
    tensors.push_back(
        {static_cast<float*>(d.send) + i * count, count, hvdrun::DataType::kFloat32});
  }
  const auto fused = [&] { hvdrun::allreduce_many(tensors, hvdrun::ReduceOp::kSum, d.stream); };
  const auto unfused = [&] {
    for (const auto& t : tensors) {
      hvdrun::allreduce(t.data, t.data, t.count, t.dtype, hvdrun::ReduceOp::kSum, d.stream);
    }
  };
  const auto raw_group = [&] {
    ncclGroupStart();
    for (const auto& t : tensors)
      ncclAllReduce(t.data, t.data, t.count, ncclFloat32, ncclSum, comm, d.stream);
    settle(ncclGroupEnd(), comm);
    check(cudaStreamSynchronize(d.stream), "sync");
  };
  const char* mode = std::getenv("HVDRUN_FUSION_MODE");
  const char* threshold = std::getenv("HVDRUN_FUSION_THRESHOLD");
  std::vector<double> tf, tu, tg;
  for (int rep = 0; rep < kReps; ++rep) {
    tf.push_back(per_call(20, fused, [] {}));
    tu.push_back(per_call(20, unfused, [] {}));
    tg.push_back(per_call(20, raw_group, [] {}));
  }
  const double fu = median(tf), un = median(tu), gr = median(tg);
  std::printf("# fusion: %d tensors x %zu KiB float32 sum, mode %s, threshold %s\n", tensor_count,
              tensor_bytes >> 10, mode ? mode : "group (default)",
              threshold ? threshold : "64 MiB (default)");
  std::printf("  fused_us %.1f  unfused_us %.1f  speedup %.2fx  raw_nccl_group_us %.1f\n", fu * 1e6,
              un * 1e6, un / fu, gr * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("nccl_bench: no CUDA device visible; this benchmark needs one GPU (np=1)\n");
    return 77;
  }
  bool fusion_only = false;
  std::size_t max_bytes = std::size_t{1} << 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fusion-only") == 0) {
      fusion_only = true;
    } else {
      max_bytes = std::strtoull(argv[i], nullptr, 10);
    }
  }
  ::setenv("HVDRUN_BACKEND", "nccl", 0);
  try {
    hvdrun::InitGuard hvd;
    ncclComm_t comm = hvdrun::nccl_communicator();
    if (hvdrun::rank() == 0) {
      int version = 0;
      ncclGetVersion(&version);
      std::printf("# GPU %d, NCCL %d, %d rank(s)\n", hvdrun::gpu_device(), version, hvdrun::size());
    }
    if (!fusion_only) sweep(max_bytes, comm);
    // The headline shape (256 x 16 KiB), then many tiny and few large tensors.
    fusion(comm, 256, 16 << 10);
    fusion(comm, 1024, 1 << 10);
    fusion(comm, 64, 256 << 10);
    fusion(comm, 16, 4 << 20);
  } catch (const hvdrun::Error& e) {
    std::fprintf(stderr, "nccl_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
