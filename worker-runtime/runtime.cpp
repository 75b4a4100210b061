// The free functions of hvdrun.h and hvdrun/device.h. Process state: the one function-local
// static slot below for this process's Runtime (job.h), which the free-function API needs
// exactly once per process; everything else lives in classes (Runtime, Communicator, Ring)
// that tests create per thread. Reads the HVDRUN_* environment at init() (options.h).
#include <memory>
#include <string>

#include "hvdrun/hvdrun.h"
#include "worker-runtime/communicator.h"
#include "worker-runtime/job.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/options.h"

namespace hvdrun {
namespace {

// Between init() and shutdown(): this process's membership in the job. Thread rules: as
// hvdrun.h.
std::unique_ptr<Runtime>& runtime() {
  static std::unique_ptr<Runtime> instance;
  return instance;
}

Communicator& communicator(const char* function) {
  return active_runtime(function).communicator();
}

// Marks the collective entered for the heartbeats until it returns or throws.
ProgressScope progress_of(const char* function, tcp::CollectiveKind kind, DataType dtype,
                          std::size_t count) {
  return ProgressScope(active_runtime(function).progress(), kind, dtype,
                       count * element_size(dtype));
}

// The device backend for a call of `function` described by the rest (compared across the
// ranks first when HVDRUN_CHECK_COLLECTIVES is on).
DeviceCollectives& device_call(const char* function, tcp::CollectiveKind kind, DataType dtype,
                               ReduceOp op, std::size_t count, int root = 0) {
  Communicator& c = communicator(function);
  if (c.device() == nullptr) {
    throw BackendError(std::string("hvdrun::") + function +
                       " on device memory needs the NCCL backend, but this process runs " +
                       c.backend_reason());
  }
  c.check_device_call(kind, dtype, op, count, root);
  return *c.device();
}

}  // namespace

Runtime& active_runtime(const char* function) {
  const auto& current = runtime();
  if (!current) {
    throw UsageError(std::string("hvdrun::") + function + " called before hvdrun::init()");
  }
  return *current;
}

void init() {
  auto& current = runtime();
  if (current) return;  // already initialised: like Horovod, a second init() is a no-op
  current = std::make_unique<Runtime>(options_from_environment());
}

void shutdown() {
  auto& current = runtime();
  if (current) runtime_log().debug("shutdown");
  current.reset();
}

bool is_initialized() noexcept {
  return runtime() != nullptr;
}

int rank() {
  return communicator("rank").topology().rank;
}
int size() {
  return communicator("size").topology().size;
}
int local_rank() {
  return communicator("local_rank").topology().local_rank;
}
int local_size() {
  return communicator("local_size").topology().local_size;
}
int cross_rank() {
  return communicator("cross_rank").topology().cross_rank;
}
int cross_size() {
  return communicator("cross_size").topology().cross_size;
}

void allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op) {
  const auto scope = progress_of("allreduce", tcp::CollectiveKind::kAllreduce, dtype, count);
  communicator("allreduce").allreduce(send, recv, count, dtype, op);
}

void broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  const auto scope = progress_of("broadcast", tcp::CollectiveKind::kBroadcast, dtype, count);
  communicator("broadcast").broadcast(buffer, count, dtype, root);
}

std::vector<std::size_t> allgather(const void* send, std::size_t count, DataType dtype,
                                   std::vector<std::byte>& out) {
  const auto scope = progress_of("allgather", tcp::CollectiveKind::kAllgather, dtype, count);
  return communicator("allgather").allgather(send, count, dtype, out);
}

void barrier() {
  const auto scope = progress_of("barrier", tcp::CollectiveKind::kBarrier, DataType::kUInt8, 0);
  communicator("barrier").barrier();
}

bool has_gpu_backend() {
  const auto& current = runtime();
  return current && current->communicator().device() != nullptr;
}

int gpu_device() {
  return has_gpu_backend() ? runtime()->communicator().device()->device() : -1;
}

ncclComm* nccl_communicator() {
  return has_gpu_backend() ? runtime()->communicator().device()->native_comm() : nullptr;
}

void allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
               CUstream_st* stream) {
  const auto scope = progress_of("allreduce", tcp::CollectiveKind::kAllreduce, dtype, count);
  device_call("allreduce", tcp::CollectiveKind::kAllreduce, dtype, op, count)
      .allreduce(send, recv, count, dtype, op, stream);
}

void broadcast(void* buffer, std::size_t count, DataType dtype, int root, CUstream_st* stream) {
  const auto scope = progress_of("broadcast", tcp::CollectiveKind::kBroadcast, dtype, count);
  device_call("broadcast", tcp::CollectiveKind::kBroadcast, dtype, ReduceOp::kSum, count, root)
      .broadcast(buffer, count, dtype, root, stream);
}

void allgather(const void* send, void* recv, std::size_t count, DataType dtype,
               CUstream_st* stream) {
  const auto scope = progress_of("allgather", tcp::CollectiveKind::kAllgather, dtype, count);
  device_call("allgather", tcp::CollectiveKind::kAllgather, dtype, ReduceOp::kSum, count)
      .allgather(send, recv, count, dtype, stream);
}

void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType dtype,
                    ReduceOp op, CUstream_st* stream) {
  const auto scope =
      progress_of("reduce_scatter", tcp::CollectiveKind::kReduceScatter, dtype, recv_count);
  device_call("reduce_scatter", tcp::CollectiveKind::kReduceScatter, dtype, op, recv_count)
      .reduce_scatter(send, recv, recv_count, dtype, op, stream);
}

void barrier(CUstream_st* stream) {
  const auto scope = progress_of("barrier", tcp::CollectiveKind::kBarrier, DataType::kUInt8, 0);
  device_call("barrier", tcp::CollectiveKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0)
      .barrier(stream);
}

void allreduce_many(std::span<const DeviceTensor> tensors, ReduceOp op, CUstream_st* stream) {
  std::size_t bytes = 0;
  for (const auto& t : tensors) bytes += t.count * element_size(t.dtype);
  const auto scope = ProgressScope(active_runtime("allreduce_many").progress(),
                                   tcp::CollectiveKind::kAllreduceMany, DataType::kUInt8, bytes);
  device_call("allreduce_many", tcp::CollectiveKind::kAllreduceMany, DataType::kUInt8, op,
              tensors.size())
      .allreduce_many(tensors, op, stream);
}

}  // namespace hvdrun
