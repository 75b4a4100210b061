// The preflight probe's GPU checks, in builds with the NCCL backend: a matrix product on this
// probe's GPU (the same kernel on every host, so that the figures compare), and an allreduce
// over NCCL among the probes of one host, one per GPU. Each gives its figure or why there is
// none, and never throws; every wait is bounded. Without the NCCL backend, none was built
// (gpu_checks_built() is false and each says so).
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>

namespace hvdrun::preflight {

bool gpu_checks_built();

struct GpuFigure {
  std::optional<double> value;
  std::string error;  // why there is no figure
};

using NcclId = std::array<char, 128>;  // ncclUniqueId's bytes
// A new NCCL unique id (the host's first probe makes it for the others), or none with `why`.
std::optional<NcclId> new_nccl_id(std::string& why);

// The name of `device`'s model ("NVIDIA H100 80GB HBM3"), or empty when the runtime does not
// say: hosts compare their matrix products with hosts of the same model.
std::string gpu_model(int device);

// TFLOP/s of the fastest of repeated 2048 x 2048 float products on `device` for about `budget`.
GpuFigure gpu_gemm_tflops(int device, std::chrono::milliseconds budget,
                          std::chrono::milliseconds limit);

// Bus bandwidth (GB/s) of a 64 MiB float allreduce among the `size` probes of this host, each
// on its own `device`, in the communicator of `id`: the best of 4 after one to warm up. Every
// probe of the host calls it. The communicator's creation is the check that NCCL works across
// the host's GPUs.
GpuFigure host_allreduce_gbps(int device, const NcclId& id, int rank, int size,
                              std::chrono::milliseconds limit);

}  // namespace hvdrun::preflight
