// Public API of libhvdrun: process-group initialisation, topology queries and collectives.
//
// A program started by `hvdrun` calls init() once; it joins the job's rendezvous (address,
// secret and slot come from the HVDRUN_* environment), receives its rank and the peer
// table, and connects the collective backend. Run outside hvdrun, init() gives a world of
// one process, as Horovod does. All collectives are blocking and must be called by every
// rank in the same order. Errors are thrown as hvdrun::Error subclasses (error.h); a peer
// that dies makes pending collectives fail with an error naming it within the timeout
// (HVDRUN_TIMEOUT seconds, default 60).
//
// Thread rules: init()/shutdown() and the collectives are called from one thread at a time.
//
// Backends: the functions below take host memory and always run on the TCP ring, also when
// the NCCL backend is active (then they do not touch the GPU). Collectives on CUDA device
// memory with a caller's stream are in device.h (included here); they need the NCCL backend.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "hvdrun/device.h"
#include "hvdrun/error.h"
#include "hvdrun/export.h"
#include "hvdrun/types.h"

namespace hvdrun {

HVDRUN_API void init();
HVDRUN_API void shutdown();  // idempotent; called by ~InitGuard
HVDRUN_API bool is_initialized() noexcept;

// RAII: init() on construction, shutdown() on destruction.
class InitGuard {
 public:
  InitGuard() { init(); }
  ~InitGuard() { shutdown(); }
  InitGuard(const InitGuard&) = delete;
  InitGuard& operator=(const InitGuard&) = delete;
};

// Topology of the current generation (valid after init()).
HVDRUN_API int rank();
HVDRUN_API int size();
HVDRUN_API int local_rank();
HVDRUN_API int local_size();
HVDRUN_API int cross_rank();
HVDRUN_API int cross_size();

// Reduce `count` elements of `send` across all ranks into `recv` on every rank.
// send == recv is allowed (in place). kAverage divides by size() (integers: truncated).
HVDRUN_API void allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                          ReduceOp op);

// Copy `count` elements of `buffer` on rank `root` into `buffer` on every rank.
HVDRUN_API void broadcast(void* buffer, std::size_t count, DataType dtype, int root);

// Every rank contributes `count` elements (counts may differ by rank). `out` receives the
// concatenation in rank order; the return value holds each rank's element count.
HVDRUN_API std::vector<std::size_t> allgather(const void* send, std::size_t count, DataType dtype,
                                              std::vector<std::byte>& out);

// Returns when every rank has entered it.
HVDRUN_API void barrier();

// Typed helpers.
template <class T>
void allreduce(std::span<T> data, ReduceOp op) {
  allreduce(data.data(), data.data(), data.size(), data_type_of_v<std::remove_const_t<T>>, op);
}
template <class T>
void broadcast(std::span<T> data, int root) {
  broadcast(data.data(), data.size(), data_type_of_v<T>, root);
}
template <class T>
std::vector<T> allgather(std::span<const T> data) {
  std::vector<std::byte> bytes;
  allgather(data.data(), data.size(), data_type_of_v<T>, bytes);
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace hvdrun
