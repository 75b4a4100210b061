// The preflight's GPU checks with the NCCL backend (gpu_checks.h), on the runtime's own owners
// of device memory, events and communicators.
#include "preflight/gpu_checks.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>

#include "hvdrun/error.h"
#include "preflight/gpu_gemm.h"
#include "worker-runtime/nccl/cuda_util.h"
#include "worker-runtime/nccl/nccl_comm.h"
#include "worker-runtime/poll_until.h"

namespace hvdrun::preflight {
namespace {

using Clock = std::chrono::steady_clock;
using nccl::CudaEvent;
using nccl::DeviceBuffer;
using nccl::DeviceGuard;

// Waits for `event` (recorded after the work) until `deadline`; throws naming `what`.
void wait_for(const CudaEvent& event, const char* what, Clock::time_point deadline) {
  cudaError_t status = cudaSuccess;
  const auto result = poll_until(deadline, nullptr, [&] {
    status = cudaEventQuery(event.get());
    return status != cudaErrorNotReady;
  });
  if (result != PollResult::kDone) throw TimeoutError(std::string(what) + " did not finish");
  nccl::check_cuda(status, what);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

bool gpu_checks_built() {
  return true;
}

std::optional<NcclId> new_nccl_id(std::string& why) {
  ncclUniqueId id;
  if (const ncclResult_t result = ncclGetUniqueId(&id); result != ncclSuccess) {
    why = std::string("ncclGetUniqueId: ") + ncclGetErrorString(result);
    return std::nullopt;
  }
  NcclId out;
  static_assert(sizeof out == sizeof id.internal);
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

std::string gpu_model(int device) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return {};
  return std::string(properties.name, strnlen(properties.name, sizeof properties.name));
}

GpuFigure gpu_gemm_tflops(int device, std::chrono::milliseconds budget,
                          std::chrono::milliseconds limit) {
  GpuFigure figure;
  try {
    const DeviceGuard guard(device);
    constexpr int n = 2048;
    constexpr std::size_t bytes = std::size_t{n} * n * sizeof(float);
    // Zero-filled: the kernel's speed does not depend on the values. Owned here so that a
    // product that never ends leaves them allocated: freeing them would wait for it.
    auto a = std::make_unique<DeviceBuffer>(bytes, "GEMM input");
    auto b = std::make_unique<DeviceBuffer>(bytes, "GEMM input");
    auto c = std::make_unique<DeviceBuffer>(bytes, "GEMM output");
    const CudaEvent done("GEMM");
    const auto deadline = Clock::now() + limit;
    const auto start = Clock::now();
    double best = 0;  // seconds of the fastest product
    int runs = 0;
    do {
      const auto begin = Clock::now();
      nccl::check_cuda(enqueue_gemm(n, static_cast<const float*>(a->data()),
                                    static_cast<const float*>(b->data()),
                                    static_cast<float*>(c->data()), nullptr),
                       "GEMM kernel");
      nccl::check_cuda(cudaEventRecord(done.get(), nullptr), "GEMM: cudaEventRecord");
      try {
        wait_for(done, "GEMM", deadline);
      } catch (const TimeoutError&) {
        (void)a.release(), (void)b.release(), (void)c.release();
        throw;
      }
      const double took = seconds_since(begin);
      if (runs++ > 0 && took > 0) best = best == 0 ? took : std::min(best, took);  // 1st warms up
    } while ((Clock::now() - start < budget || runs < 3) && Clock::now() < deadline);
    if (best <= 0) throw TimeoutError("no GEMM was timed before the deadline");
    figure.value = 2.0 * n * n * static_cast<double>(n) / best / 1e12;
  } catch (const std::exception& e) {
    figure.error = std::string("device ") + std::to_string(device) + ": " + e.what();
  }
  return figure;
}

GpuFigure host_allreduce_gbps(int device, const NcclId& id, int rank, int size,
                              std::chrono::milliseconds limit) {
  GpuFigure figure;
  try {
    const DeviceGuard guard(device);
    ncclUniqueId unique;
    std::memcpy(unique.internal, id.data(), id.size());
    auto comm = nccl::NcclComm::create(unique, rank, size, limit);
    constexpr std::size_t count = std::size_t{16} << 20;  // 64 MiB of floats
    const DeviceBuffer buffer(count * sizeof(float), "allreduce buffer");
    const CudaEvent done("allreduce");
    const auto deadline = Clock::now() + limit;
    double best = 0;
    for (int i = 0; i < 5; ++i) {
      const auto begin = Clock::now();
      comm.settle(ncclAllReduce(buffer.data(), buffer.data(), count, ncclFloat, ncclSum, comm.get(),
                                nullptr),
                  "ncclAllReduce", deadline);
      nccl::check_cuda(cudaEventRecord(done.get(), nullptr), "allreduce: cudaEventRecord");
      comm.wait(done.get(), "ncclAllReduce", deadline, limit);
      const double took = seconds_since(begin);
      if (i > 0 && took > 0) best = best == 0 ? took : std::min(best, took);  // 1st warms up
    }
    // Bus bandwidth: what each GPU's link carries in a ring, comparable across GPU counts.
    const double bytes = static_cast<double>(count * sizeof(float));
    if (best <= 0) throw TimeoutError("no allreduce was timed");
    figure.value = bytes * 2.0 * (size - 1) / size / best / 1e9;
  } catch (const std::exception& e) {
    figure.error = e.what();
  }
  return figure;
}

}  // namespace hvdrun::preflight
