// Interface of a device-memory collective backend (the NCCL backend implements it), so that
// the Communicator and the free functions compile without CUDA. Contracts: hvdrun/device.h.
// Thread rules: one thread at a time. Lifetime: one generation, owned by the Communicator.
#pragma once

#include <cstddef>
#include <span>

#include "hvdrun/device.h"
#include "hvdrun/types.h"
#include "worker-runtime/abort_signal.h"

namespace hvdrun {

// What the next generation of an elastic job may reuse of a backend's communicator
// (nccl/comm_plan.h).
struct DeviceCommState {
  int rank = -1, size = 0, device = -1;
  bool alive = false;       // not aborted: it may still be shrunk
  bool has_shrink = false;  // the library can shrink a communicator
};

class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  DeviceCollectives() = default;
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;

  virtual int device() const noexcept = 0;
  virtual ncclComm* native_comm() const noexcept = 0;
  virtual void allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                         ReduceOp op, CUstream_st* stream) = 0;
  virtual void broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                         CUstream_st* stream) = 0;
  virtual void allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                         CUstream_st* stream) = 0;
  virtual void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType dtype,
                              ReduceOp op, CUstream_st* stream) = 0;
  virtual void barrier(CUstream_st* stream) = 0;
  // Every completion wait also ends, with AbortedError, when `signal` is raised.
  virtual void set_abort_signal(const AbortSignal* signal) noexcept = 0;
  virtual void allreduce_many(std::span<const DeviceTensor> tensors, ReduceOp op,
                              CUstream_st* stream) = 0;
  virtual DeviceCommState comm_state() const noexcept = 0;
  // Its generation is over: it stops watching the abort signal, and ends by aborting its
  // communicator rather than finalizing it (peers may be gone).
  virtual void retire() noexcept = 0;
};

}  // namespace hvdrun
