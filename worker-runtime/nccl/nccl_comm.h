// Owner of one non-blocking NCCL communicator (ncclConfig_t.blocking = 0): creation with a
// deadline, settling of ncclInProgress results, completion waits that poll cudaEventQuery and
// ncclCommGetAsyncError, and abort on any error or timeout. Messages name the operation, the
// rank and NCCL's text. Thread rules: one thread at a time, with the comm's device current.
// Lifetime: one generation; the destructor finalizes (bounded) or aborts. An elastic job's
// survivors may shrink it into the next generation's (see comm_plan.h): a wait ended by the
// abort signal revokes it (ncclCommRevoke: NCCL's pending work stops, the communicator stays)
// where the NCCL has that call, and aborts it otherwise.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <span>
#include <string>

#include "worker-runtime/abort_signal.h"
#include "worker-runtime/nccl/nccl_extensions.h"

namespace hvdrun::nccl {

using Clock = std::chrono::steady_clock;

class NcclComm {
 public:
  // Joins the communicator of `id` as `rank` of `size` on the current device. Every rank
  // calls it; returns when all have joined. On error or after `limit` the comm is aborted
  // and BackendError / TimeoutError thrown; when `abort` is raised meanwhile, AbortedError.
  // The communicator keeps watching `abort` (see set_abort_signal).
  static NcclComm create(const ncclUniqueId& id, int rank, int size,
                         std::chrono::milliseconds limit, const AbortSignal* abort = nullptr);
  NcclComm() = default;
  ~NcclComm();
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const noexcept { return comm_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  // The communicator of `size - excluded.size()` ranks that the other ranks of this one form
  // with the same call, in which this rank becomes `new_rank` (NCCL closes the gaps, keeping
  // the order). This communicator is aborted afterwards, whatever the outcome. Errors as
  // create(); UsageError when `excluded` is empty (NCCL's rule), this NCCL has no
  // ncclCommShrink or this comm cannot be shrunk.
  NcclComm shrink(std::span<const int> excluded, int new_rank, std::chrono::milliseconds limit,
                  const AbortSignal* abort);
  // Not aborted (alive or revoked) and the NCCL has ncclCommShrink.
  bool shrinkable() const noexcept {
    return comm_ != nullptr && initialized_ && extensions_.shrink != nullptr;
  }
  bool has_shrink() const noexcept { return extensions_.shrink != nullptr; }
  // Its generation is over: the destructor aborts instead of finalizing (peers may be gone).
  void retire() noexcept { retired_ = true; }

  // Throws BackendError if an earlier failure aborted the communicator.
  void check_usable(const char* op) const;
  // For the result of an NCCL call: returns once it is no longer ncclInProgress; on error or
  // at `deadline` aborts and throws.
  void settle(ncclResult_t result, const char* op, Clock::time_point deadline);
  // Returns once `event` has completed; aborts and throws on a CUDA error, an asynchronous
  // NCCL error, or at `deadline` (TimeoutError naming `limit`).
  void wait(cudaEvent_t event, const char* op, Clock::time_point deadline,
            std::chrono::milliseconds limit);
  // Aborts the communicator and throws BackendError "<op> (rank r of n): <what>".
  [[noreturn]] void fail(const char* op, const std::string& what);
  // settle() and wait() also end when `signal` is raised (null: never): the communicator is
  // aborted (ncclCommAbort) and AbortedError thrown within microseconds of the signal.
  void set_abort_signal(const AbortSignal* signal) noexcept { abort_signal_ = signal; }

 private:
  [[noreturn]] void aborted(const char* op);
  NcclComm(ncclComm_t comm, int rank, int size)
      : comm_(comm), rank_(rank), size_(size), extensions_(NcclExtensions::find()) {}
  // Waits until a revoked communicator is quiescent (bounded by `deadline`).
  void quiesce(Clock::time_point deadline);
  std::string where(const char* op) const;
  std::string nccl_error(ncclResult_t result) const;  // text + ncclGetLastError
  void abort() noexcept;
  void release() noexcept;

  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 0;
  std::string broken_;  // first failure, once aborted or revoked
  const AbortSignal* abort_signal_ = nullptr;
  NcclExtensions extensions_;
  bool initialized_ = false;  // created (a creation cut short is aborted, not revoked)
  bool revoked_ = false;      // ncclCommRevoke'd: may be shrunk; never finalized
  bool retired_ = false;
};

}  // namespace hvdrun::nccl
