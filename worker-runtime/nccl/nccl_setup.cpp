// probe_devices() and start_nccl_backend() (see nccl_setup.h). Reads NCCL's own
// NCCL_MULTI_RANK_GPU_ENABLE.
#include "worker-runtime/nccl/nccl_setup.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "hvdrun/error.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/nccl/cuda_util.h"
#include "worker-runtime/nccl/nccl_backend.h"
#include "worker-runtime/nccl/nccl_types.h"

namespace hvdrun::nccl {
namespace {

ncclUniqueId exchange_id(const Topology& topology, rdzv::Client* client,
                         std::chrono::milliseconds timeout) {
  ncclUniqueId id{};
  if (topology.rank == 0) {
    const ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      throw BackendError("ncclGetUniqueId on rank 0: " + result_text(result) +
                         "; NCCL: " + ncclGetLastError(nullptr));
    }
    if (topology.size > 1) {
      client->set(kNcclIdKey, std::string_view(id.internal, sizeof id.internal), timeout);
    }
    return id;
  }
  const std::string blob = client->get(kNcclIdKey, timeout);
  if (blob.size() != sizeof id.internal) {
    throw ProtocolError("rank " + std::to_string(topology.rank) + ": '" + kNcclIdKey +
                        "' from the rendezvous has " + std::to_string(blob.size()) +
                        " bytes, expected " + std::to_string(sizeof id.internal));
  }
  std::memcpy(id.internal, blob.data(), blob.size());
  return id;
}

}  // namespace

DeviceFacts probe_devices() {
  DeviceFacts facts;
  facts.built_with_nccl = true;
  const VisibleDevices devices = visible_devices();
  facts.device_count = devices.count;
  facts.device_error = devices.error;
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) facts.nccl_version = version;
  const char* multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  facts.has_shrink = NcclExtensions::find().shrink != nullptr;
  facts.shared_gpu_allowed = version >= 23000 && multi != nullptr && std::strcmp(multi, "1") == 0;
  return facts;
}

std::unique_ptr<DeviceCollectives> start_nccl_backend(const Topology& topology, int device,
                                                      rdzv::Client* client, const Options& options,
                                                      const AbortSignal* abort,
                                                      const CommPlan& plan,
                                                      std::unique_ptr<DeviceCollectives> previous) {
  if (topology.size > 1 && client == nullptr) {
    throw UsageError("NCCL backend: " + std::to_string(topology.size) +
                     " ranks but no rendezvous to relay the unique id");
  }
  const auto start = Clock::now();
  check_cuda(cudaSetDevice(device), "rank " + std::to_string(topology.rank) + ": cudaSetDevice(" +
                                        std::to_string(device) + ")");
  NcclComm comm;
  auto* parent = dynamic_cast<NcclBackend*>(previous.get());
  if (plan.shrink && parent != nullptr) {
    comm = parent->comm().shrink(plan.excluded, topology.rank, options.start_timeout, abort);
    previous.reset();
  } else {
    if (plan.shrink) {
      throw BackendError("rank " + std::to_string(topology.rank) +
                         ": the communicator plan is to shrink, but this rank has no NCCL "
                         "communicator to shrink");
    }
    previous.reset();  // aborts it, freeing its device memory before the new one
    const ncclUniqueId id = exchange_id(topology, client, options.start_timeout);
    comm = NcclComm::create(id, topology.rank, topology.size, options.start_timeout, abort);
  }
  BackendSettings settings;
  settings.device = device;
  settings.timeout = options.timeout;
  settings.fusion_threshold = options.fusion_threshold;
  settings.fusion_mode = options.fusion_mode;
  auto backend = std::make_unique<NcclBackend>(std::move(comm), settings);
  runtime_log().debug(
      "NCCL backend on device {} ready in {} ms, {} (fusion {} up to {} bytes)", device,
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
      plan.shrink ? "shrunk" : "new", to_string(settings.fusion_mode), settings.fusion_threshold);
  return backend;
}

}  // namespace hvdrun::nccl
