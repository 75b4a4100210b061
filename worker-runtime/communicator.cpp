// Communicator (see communicator.h): argument checks, then the TCP ring.
#include "worker-runtime/communicator.h"

#include <string>

#include "hvdrun/error.h"

namespace hvdrun {
namespace {

bool valid(DataType dtype) {
  return element_size(dtype) != 0;
}

bool valid(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kProduct:
      return true;
  }
  return false;
}

void check_buffer(const char* what, const void* buffer, std::size_t count) {
  if (buffer == nullptr && count > 0) {
    throw UsageError(std::string(what) + ": null buffer for " + std::to_string(count) +
                     " elements");
  }
}

void check_type(const char* what, DataType dtype) {
  if (!valid(dtype)) {
    throw UsageError(std::string(what) + ": unknown data type " +
                     std::to_string(static_cast<int>(dtype)));
  }
}

}  // namespace

Communicator::Communicator(Topology topology, std::unique_ptr<tcp::Ring> ring,
                           std::shared_ptr<AbortSignal> abort)
    : topology_(topology),
      abort_(abort ? std::move(abort) : std::make_shared<AbortSignal>()),
      ring_(std::move(ring)) {
  if (!ring_ || ring_->rank() != topology_.rank || ring_->size() != topology_.size) {
    throw UsageError("communicator: ring does not match rank " + std::to_string(topology_.rank) +
                     " of " + std::to_string(topology_.size));
  }
  ring_->set_abort_signal(abort_.get());
}

std::unique_ptr<Communicator> Communicator::single_process() {
  auto ring = std::make_unique<tcp::Ring>(0, 1, tcp::RingAddresses{}, tcp::Listener{},
                                          std::string{}, 0, std::chrono::milliseconds(1));
  return std::make_unique<Communicator>(Topology{}, std::move(ring));
}

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                             ReduceOp op) {
  check_type("allreduce", dtype);
  if (!valid(op)) {
    throw UsageError("allreduce: unknown reduce op " + std::to_string(static_cast<int>(op)));
  }
  check_buffer("allreduce", send, count);
  check_buffer("allreduce", recv, count);
  ring_->allreduce(send, recv, count, dtype, op);
}

void Communicator::broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  check_type("broadcast", dtype);
  check_buffer("broadcast", buffer, count);
  ring_->broadcast(buffer, count, dtype, root);
}

std::vector<std::size_t> Communicator::allgather(const void* send, std::size_t count,
                                                 DataType dtype, std::vector<std::byte>& out) {
  check_type("allgather", dtype);
  check_buffer("allgather", send, count);
  return ring_->allgather(send, count, dtype, out);
}

void Communicator::barrier() {
  ring_->barrier();
}

void Communicator::set_device_backend(std::unique_ptr<DeviceCollectives> device,
                                      std::string reason) {
  device_ = std::move(device);
  if (device_) device_->set_abort_signal(abort_.get());
  backend_reason_ = std::move(reason);
}

void Communicator::check_device_call(tcp::CollectiveKind kind, DataType dtype, ReduceOp op,
                                     std::size_t count, int root) {
  if (check_device_calls_) ring_->check_call(kind, dtype, op, count, root);
}

std::unique_ptr<DeviceCollectives> Communicator::take_device_backend() noexcept {
  if (device_) device_->retire();
  return std::move(device_);
}

}  // namespace hvdrun
