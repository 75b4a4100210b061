// Collectives on CUDA device memory (the NCCL backend of libhvdrun).
//
// Backend: init() picks NCCL when libhvdrun was built with it, a CUDA device is visible,
// HVDRUN_BACKEND is not `cpu` and no two local ranks would share a GPU; it pins the device
// cudaSetDevice(local_rank % device_count) (HVDRUN_GPU_DEVICE=N overrides; with
// HVDRUN_GPU_EXCLUSIVE=1, more local ranks than devices is an error) and builds one NCCL
// communicator over all ranks. HVDRUN_BACKEND=nccl makes a missing build or device an error;
// HVDRUN_BACKEND=cpu never touches CUDA. The host-memory API of hvdrun.h always runs on the
// TCP ring, also when the NCCL backend is active; only the functions below use NCCL.
//
// Streams: `stream` is the caller's cudaStream_t (this header needs no CUDA header:
// cudaStream_t is `CUstream_st*`); nullptr is the legacy default stream. Buffers must be
// device (or managed) memory of the pinned device.
//
// Completion: each call enqueues the collective on `stream` after the work already there and
// returns once it has completed on the device (it polls the stream and NCCL's asynchronous
// error state instead of blocking in the driver). The results are then ready for the host and
// for any stream. A collective that does not complete within HVDRUN_TIMEOUT seconds, or an
// NCCL error (peer lost, network, invalid use), aborts the communicator and throws
// BackendError or TimeoutError naming the collective, the rank and NCCL's message; later
// device calls then fail at once. Nothing waits forever.
//
// Order: like every collective, all ranks call these in the same order.
#pragma once

#include <cstddef>
#include <span>

#include "hvdrun/export.h"
#include "hvdrun/types.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*
struct ncclComm;     // ncclComm_t is ncclComm*

namespace hvdrun {

// True between init() and shutdown() when the NCCL backend is active.
HVDRUN_API bool has_gpu_backend();
// The CUDA device this process is pinned to, or -1 without the NCCL backend.
HVDRUN_API int gpu_device();
// hvdrun's NCCL communicator over all ranks (null without the NCCL backend), for programs
// that issue their own NCCL calls on it (benchmarks, send/recv). hvdrun owns it: do not
// destroy it, keep the call order identical on all ranks, and check ncclInProgress results
// (it is non-blocking).
HVDRUN_API ncclComm* nccl_communicator();

// Device-memory allreduce: `count` elements of `send` from every rank, reduced into `recv`
// (send == recv: in place). kAverage is ncclAvg (integers: truncated).
HVDRUN_API void allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                          ReduceOp op, CUstream_st* stream);
// Copy `count` elements of `buffer` on rank `root` into `buffer` on every rank.
HVDRUN_API void broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                          CUstream_st* stream);
// Every rank sends `count` elements; `recv` receives size() * count elements in rank order.
HVDRUN_API void allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                          CUstream_st* stream);
// `send` holds size() * recv_count elements; rank r receives the reduction of block r.
HVDRUN_API void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType dtype,
                               ReduceOp op, CUstream_st* stream);
// Returns when every rank has reached it and `stream` has drained.
HVDRUN_API void barrier(CUstream_st* stream);

// One tensor of a fused allreduce: `count` elements at `data` (device memory, reduced in
// place). Tensors may have different data types.
struct DeviceTensor {
  void* data = nullptr;
  std::size_t count = 0;
  DataType dtype = DataType::kFloat32;
};

// Allreduces every tensor of the list (in place) in one call. HVDRUN_FUSION_MODE selects
// how: `pack` (default) copies tensors of one data type into a fusion buffer of up to
// HVDRUN_FUSION_THRESHOLD bytes (default 64 MiB) and runs one collective per buffer (larger
// tensors are reduced in place on their own); `group` issues one collective per tensor inside
// one ncclGroupStart/ncclGroupEnd. HVDRUN_FUSION_THRESHOLD=0 turns fusion off: one collective
// per tensor. Every rank passes the same counts and types in the same order.
HVDRUN_API void allreduce_many(std::span<const DeviceTensor> tensors, ReduceOp op,
                               CUstream_st* stream);

}  // namespace hvdrun
