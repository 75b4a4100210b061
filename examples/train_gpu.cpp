// The example's --gpu path: the same data-parallel SGD as train.cpp with the model, the
// forward/backward pass and the SGD step on the GPU (mlp_kernels.cu). Data are generated on
// the host as in the CPU path and copied once; initial weights are broadcast from rank 0 and
// gradients summed with hvdrun's device allreduce (NCCL) on one stream; the final weights are
// compared across ranks over the host API. Checkpoints are not supported here.
#include "train_gpu.h"

#include <cuda_runtime.h>
#include <hvdrun/hvdrun.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mlp.h"
#include "mlp_kernels.h"

namespace example {
namespace {

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
  }
}

// cudaMalloc'd array, freed on destruction.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    check(cudaMalloc(&data_, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(std::span<const T> host) : DeviceArray(host.size()) {
    check(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice), "upload");
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }
  std::size_t size() const { return n_; }

 private:
  T* data_ = nullptr;
  std::size_t n_ = 0;
};

class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream"); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

struct DeviceData {
  DeviceArray<float> x;
  DeviceArray<int> y;
  std::size_t size;
  explicit DeviceData(const Dataset& d)
      : x(std::span<const float>(d.x)), y(std::span<const int>(d.y)), size(d.size()) {}
};

// Loss and accuracy over this rank's rows of `data`, summed over ranks on the device.
std::pair<double, double> evaluate(const DeviceData& data, gpu::Dims dims, const float* params,
                                   DeviceArray<double>& sums, cudaStream_t stream) {
  const int rank = hvdrun::rank(), world = hvdrun::size();
  const int mine = static_cast<int>(
      (data.size - static_cast<std::size_t>(rank) + static_cast<std::size_t>(world) - 1) /
      static_cast<std::size_t>(world));
  check(cudaMemsetAsync(sums.get(), 0, 2 * sizeof(double), stream), "memset");
  check(gpu::accumulate(data.x.get(), data.y.get(), {nullptr, rank, world, mine}, dims, params,
                        nullptr, sums.get(), stream),
        "evaluate");
  hvdrun::allreduce(sums.get(), sums.get(), 2, hvdrun::DataType::kFloat64, hvdrun::ReduceOp::kSum,
                    stream);
  double host[2];
  check(cudaMemcpy(host, sums.get(), sizeof host, cudaMemcpyDeviceToHost), "download");
  return {host[0] / static_cast<double>(data.size), host[1] / static_cast<double>(data.size)};
}

std::uint64_t fnv1a(std::span<const float> values) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte b : std::as_bytes(values))
    h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
  return h;
}

int run(const Options& opt) {
  const int rank = hvdrun::rank();
  const auto world = static_cast<std::size_t>(hvdrun::size());
  const Dataset train = make_dataset(opt.samples, opt.features, opt.classes, opt.seed);
  const Dataset valid = make_dataset(opt.samples / 8, opt.features, opt.classes, opt.seed);
  Mlp model(opt.features, opt.hidden, opt.classes, opt.seed + static_cast<std::uint64_t>(rank));
  const gpu::Dims dims{static_cast<int>(opt.features), static_cast<int>(opt.hidden),
                       static_cast<int>(opt.classes)};
  Stream stream;
  const DeviceData d_train(train), d_valid(valid);
  DeviceArray<float> params(std::span<const float>(model.params()));
  DeviceArray<float> grad(model.count() + 1);
  DeviceArray<double> sums(2);
  DeviceArray<int> order(train.size());
  hvdrun::broadcast(params.get(), model.count(), hvdrun::DataType::kFloat32, 0, stream.get());
  if (rank == 0) {
    std::printf(
        "training on %zu ranks (GPU %d, NCCL): %zu samples, %zu parameters, batch %zu per "
        "rank\n",
        world, hvdrun::gpu_device(), train.size(), model.count(), opt.batch_size);
  }
  std::vector<int> host_order(train.size());
  const std::size_t steps = (train.size() + world * opt.batch_size - 1) / (world * opt.batch_size);
  for (int epoch = 0; epoch < opt.epochs; ++epoch) {
    const auto begin = std::chrono::steady_clock::now();
    std::iota(host_order.begin(), host_order.end(), 0);
    std::shuffle(host_order.begin(), host_order.end(),
                 std::mt19937_64(opt.seed + static_cast<std::uint64_t>(epoch)));
    check(cudaMemcpyAsync(order.get(), host_order.data(), host_order.size() * sizeof(int),
                          cudaMemcpyHostToDevice, stream.get()),
          "upload order");
    check(cudaMemsetAsync(sums.get(), 0, 2 * sizeof(double), stream.get()), "memset");
    for (std::size_t step = 0; step < steps; ++step) {
      const float lr =
          learning_rate(opt, world, epoch + static_cast<double>(step) / static_cast<double>(steps));
      const std::size_t first = step * world * opt.batch_size + static_cast<std::size_t>(rank);
      const std::size_t last = std::min(train.size(), (step + 1) * world * opt.batch_size);
      const int count = first < last ? static_cast<int>((last - first + world - 1) / world) : 0;
      check(cudaMemsetAsync(grad.get(), 0, grad.size() * sizeof(float), stream.get()), "memset");
      check(gpu::accumulate(d_train.x.get(), d_train.y.get(),
                            {order.get(), static_cast<int>(first), static_cast<int>(world), count},
                            dims, params.get(), grad.get(), sums.get(), stream.get()),
            "forward/backward");
      hvdrun::allreduce(grad.get(), grad.get(), grad.size(), hvdrun::DataType::kFloat32,
                        hvdrun::ReduceOp::kSum, stream.get());
      check(gpu::sgd_step(params.get(), grad.get(), model.count(), lr, stream.get()), "sgd");
    }
    hvdrun::allreduce(sums.get(), sums.get(), 1, hvdrun::DataType::kFloat64, hvdrun::ReduceOp::kSum,
                      stream.get());
    double train_loss = 0;
    check(cudaMemcpy(&train_loss, sums.get(), sizeof train_loss, cudaMemcpyDeviceToHost), "loss");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const auto [val_loss, val_acc] = evaluate(d_valid, dims, params.get(), sums, stream.get());
    if (rank == 0) {
      std::printf(
          "epoch %d/%d: train loss %.4f  val loss %.4f  val accuracy %.4f  %.0f "
          "samples/sec\n",
          epoch + 1, opt.epochs, train_loss / static_cast<double>(train.size()), val_loss, val_acc,
          static_cast<double>(train.size()) / seconds);
    }
  }
  check(cudaMemcpy(model.params().data(), params.get(), model.params().size_bytes(),
                   cudaMemcpyDeviceToHost),
        "download weights");
  const auto hash = static_cast<std::int64_t>(fnv1a(model.params()));
  const auto hashes = hvdrun::allgather(std::span<const std::int64_t>(&hash, 1));
  const bool agree =
      std::all_of(hashes.begin(), hashes.end(), [&](std::int64_t h) { return h == hashes[0]; });
  const auto [loss, accuracy] = evaluate(d_valid, dims, params.get(), sums, stream.get());
  if (rank == 0) {
    std::printf("final: val loss %.4f  val accuracy %.4f\n", loss, accuracy);
    if (agree) {
      std::printf("all %zu ranks agree: weights hash %016llx\n", world,
                  static_cast<unsigned long long>(hashes[0]));
    }
  }
  if (!agree) {
    std::fprintf(stderr, "rank %d: final weights differ between ranks\n", rank);
    return 1;
  }
  return 0;
}

}  // namespace

int train_on_gpu(const Options& opt) {
  if (!opt.checkpoint_dir.empty()) {
    std::fprintf(stderr, "train: --checkpoint-dir is not supported with --gpu\n");
    return 2;
  }
  if (opt.hidden > static_cast<std::size_t>(gpu::kMaxHidden) ||
      opt.classes > static_cast<std::size_t>(gpu::kMaxClasses)) {
    std::fprintf(stderr, "train: --gpu supports at most %d hidden units and %d classes\n",
                 gpu::kMaxHidden, gpu::kMaxClasses);
    return 2;
  }
  // --gpu asks for NCCL unless the user chose a backend: init() then says why it cannot.
  ::setenv("HVDRUN_BACKEND", "nccl", 0);
  try {
    hvdrun::init();
  } catch (const hvdrun::Error& e) {
    std::fprintf(stderr, "train: --gpu: %s\n", e.what());
    return 2;
  }
  try {
    if (!hvdrun::has_gpu_backend()) {  // HVDRUN_BACKEND=cpu given by the user
      std::fprintf(stderr, "train: --gpu needs the NCCL backend, not HVDRUN_BACKEND=cpu\n");
      hvdrun::shutdown();
      return 2;
    }
    const int code = run(opt);
    hvdrun::shutdown();
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train: %s\n", e.what());
    return 1;
  }
}

}  // namespace example
