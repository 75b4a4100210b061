// NcclComm (see nccl_comm.h). Waits are poll_until (poll_until.h): bounded by the deadline,
// interrupted by the abort signal.
#include "worker-runtime/nccl/nccl_comm.h"

#include <thread>
#include <utility>
#include <vector>

#include "hvdrun/error.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/nccl/cuda_util.h"
#include "worker-runtime/nccl/nccl_types.h"
#include "worker-runtime/poll_until.h"

namespace hvdrun::nccl {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

long long ms(Clock::duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

}  // namespace

NcclComm NcclComm::create(const ncclUniqueId& id, int rank, int size, milliseconds limit,
                          const AbortSignal* abort) {
  const auto start = Clock::now();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "hvdrun";
  ncclComm_t raw = nullptr;
  const ncclResult_t result = ncclCommInitRankConfig(&raw, size, id, rank, &config);
  NcclComm comm(raw, rank, size);
  comm.abort_signal_ = abort;
  if (raw == nullptr) {
    throw BackendError(comm.where("ncclCommInitRankConfig") + ": " + result_text(result) +
                       "; NCCL: " + ncclGetLastError(nullptr));
  }
  comm.settle(result, "ncclCommInitRankConfig", start + limit);
  comm.initialized_ = true;
  runtime_log().debug("NCCL communicator rank {}/{} ready in {} ms", rank, size,
                      ms(Clock::now() - start));
  return comm;
}

NcclComm::~NcclComm() {
  release();
}

NcclComm::NcclComm(NcclComm&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)),
      rank_(other.rank_),
      size_(other.size_),
      broken_(std::move(other.broken_)),
      abort_signal_(other.abort_signal_),
      extensions_(other.extensions_),
      initialized_(other.initialized_),
      revoked_(other.revoked_),
      retired_(other.retired_) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, nullptr);
    rank_ = other.rank_;
    size_ = other.size_;
    broken_ = std::move(other.broken_);
    abort_signal_ = other.abort_signal_;
    extensions_ = other.extensions_;
    initialized_ = other.initialized_;
    revoked_ = other.revoked_;
    retired_ = other.retired_;
  }
  return *this;
}

std::string NcclComm::where(const char* op) const {
  return std::string("nccl ") + op + " (rank " + std::to_string(rank_) + " of " +
         std::to_string(size_) + ")";
}

std::string NcclComm::nccl_error(ncclResult_t result) const {
  std::string text = result_text(result);
  const char* last = ncclGetLastError(comm_);
  if (last && *last) text += "; NCCL: " + std::string(last);
  return text;
}

void NcclComm::check_usable(const char* op) const {
  if (!broken_.empty()) {
    throw BackendError(where(op) + ": the NCCL communicator was aborted after an earlier " +
                       "failure (" + broken_ + "); re-initialise hvdrun");
  }
}

void NcclComm::fail(const char* op, const std::string& what) {
  const std::string message = where(op) + ": " + what + "; communicator aborted";
  runtime_log().error("{}", message);
  if (broken_.empty()) broken_ = what;
  abort();
  throw BackendError(message);
}

void NcclComm::settle(ncclResult_t result, const char* op, Clock::time_point deadline) {
  if (result != ncclSuccess && result != ncclInProgress) fail(op, nccl_error(result));
  if (result == ncclSuccess) return;
  ncclResult_t state = ncclInProgress;
  const auto start = Clock::now();
  const auto result_of_wait = poll_until(deadline, abort_signal_, [&] {
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) state = r;
    return state != ncclInProgress;
  });
  if (result_of_wait == PollResult::kAborted) aborted(op);
  if (result_of_wait == PollResult::kTimedOut) {
    const std::string message = where(op) + ": not done after " +
                                std::to_string(ms(Clock::now() - start)) +
                                " ms (deadline reached); communicator aborted";
    if (broken_.empty()) broken_ = "timeout in " + std::string(op);
    runtime_log().error("{}", message);
    abort();
    throw TimeoutError(message);
  }
  if (state != ncclSuccess) fail(op, nccl_error(state));
}

void NcclComm::wait(cudaEvent_t event, const char* op, Clock::time_point deadline,
                    milliseconds limit) {
  cudaError_t cuda = cudaSuccess;
  ncclResult_t async = ncclSuccess;
  const auto result_of_wait = poll_until(deadline, abort_signal_, [&] {
    cuda = cudaEventQuery(event);
    if (cuda == cudaSuccess) return true;
    if (cuda != cudaErrorNotReady) return true;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &async);
    if (r != ncclSuccess) async = r;
    return async != ncclSuccess && async != ncclInProgress;
  });
  if (result_of_wait == PollResult::kAborted) aborted(op);
  if (result_of_wait == PollResult::kTimedOut) {
    const std::string message = where(op) + ": not complete after " +
                                std::to_string(limit.count()) +
                                " ms (HVDRUN_TIMEOUT); a rank may be stalled or gone; "
                                "communicator aborted";
    if (broken_.empty()) broken_ = "timeout in " + std::string(op);
    runtime_log().error("{}", message);
    abort();
    throw TimeoutError(message);
  }
  if (cuda != cudaSuccess && cuda != cudaErrorNotReady) fail(op, cuda_message(cuda));
  if (async != ncclSuccess && async != ncclInProgress) fail(op, nccl_error(async));
}

// A wait ended from outside (the generation broke): NCCL's pending work is stopped. Revoked,
// the communicator can still be shrunk for the next generation; aborted, it is gone.
void NcclComm::aborted(const char* op) {
  const auto reason = abort_signal_->reason();
  if (broken_.empty()) broken_ = "aborted: " + reason;
  if (extensions_.revoke != nullptr && comm_ != nullptr && initialized_ && !revoked_) {
    const auto start = Clock::now();
    const ncclResult_t result = extensions_.revoke(comm_, 0);
    if (result == ncclSuccess || result == ncclInProgress) {
      revoked_ = true;
      const std::string message = where(op) + ": aborted: " + reason + "; communicator revoked";
      runtime_log().info("{} ({} us)", message,
                         std::chrono::duration_cast<microseconds>(Clock::now() - start).count());
      throw AbortedError(message);
    }
    runtime_log().warn("{}: ncclCommRevoke failed ({}); aborting", where(op), nccl_error(result));
  }
  const std::string message = where(op) + ": aborted: " + reason + "; communicator aborted";
  runtime_log().info("{}", message);
  abort();
  throw AbortedError(message);
}

void NcclComm::quiesce(Clock::time_point deadline) {
  ncclResult_t state = ncclInProgress;
  const auto result_of_wait = poll_until(deadline, nullptr, [&] {
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) state = r;
    return state != ncclInProgress;
  });
  if (result_of_wait == PollResult::kTimedOut) {
    fail("shrink", "the revoked communicator did not settle before the deadline");
  }
  if (state != ncclSuccess) fail("shrink", "revoked communicator: " + nccl_error(state));
}

NcclComm NcclComm::shrink(std::span<const int> excluded, int new_rank, milliseconds limit,
                          const AbortSignal* signal) {
  if (!shrinkable()) {
    throw UsageError(
        where("shrink") + ": " +
        (comm_ == nullptr ? "the communicator was aborted" : "this NCCL has no ncclCommShrink"));
  }
  if (excluded.empty()) {  // NCCL's own rule: at least one rank leaves
    throw UsageError(where("shrink") + ": a shrink that leaves no rank out");
  }
  const auto start = Clock::now();
  const auto deadline = start + limit;
  if (revoked_) quiesce(deadline);
  std::vector<int> list(excluded.begin(), excluded.end());  // NCCL sorts it in place
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "hvdrun";
  ncclComm_t raw = nullptr;
  const int flags = revoked_ ? NcclExtensions::kShrinkDefault : NcclExtensions::kShrinkAbort;
  const ncclResult_t result =
      extensions_.shrink(comm_, list.data(), static_cast<int>(list.size()), &raw, &config, flags);
  const int new_size = size_ - static_cast<int>(list.size());
  if (raw == nullptr) fail("ncclCommShrink", nccl_error(result));
  NcclComm child(raw, new_rank, new_size);
  child.abort_signal_ = signal;
  child.settle(result, "ncclCommShrink", deadline);
  child.initialized_ = true;
  int rank = -1, count = 0;
  if (ncclCommUserRank(raw, &rank) != ncclSuccess || ncclCommCount(raw, &count) != ncclSuccess ||
      rank != new_rank || count != new_size) {
    child.fail("ncclCommShrink", "the shrunk communicator has rank " + std::to_string(rank) +
                                     " of " + std::to_string(count) + ", expected " +
                                     std::to_string(new_rank) + " of " + std::to_string(new_size));
  }
  abort();  // the parent
  runtime_log().debug("NCCL communicator rank {}/{} shrunk from {} ranks in {} ms", new_rank,
                      new_size, size_, ms(Clock::now() - start));
  return child;
}

// ncclCommAbort stops NCCL's own kernels and threads, but returns only once the work queued
// ahead of NCCL's on the stream (the program's kernels) has finished: a long one shows here.
void NcclComm::abort() noexcept {
  if (comm_ == nullptr) return;
  const auto start = Clock::now();
  ncclCommAbort(comm_);
  comm_ = nullptr;
  const auto took = ms(Clock::now() - start);
  if (took >= 1000) {
    runtime_log().warn("{}: ncclCommAbort took {} ms (it waits for the work queued before NCCL's)",
                       where("abort"), took);
  } else {
    runtime_log().debug("{}: ncclCommAbort took {} ms", where("abort"), took);
  }
}

// Finalize flushes outstanding work; bounded so that a lost peer cannot hold shutdown.
void NcclComm::release() noexcept {
  if (comm_ == nullptr) return;
  if (revoked_ || retired_) {  // finalizing a revoked communicator is invalid
    abort();
    return;
  }
  ncclResult_t state = ncclCommFinalize(comm_);
  if (state == ncclInProgress) {
    poll_until(Clock::now() + milliseconds(10000), abort_signal_, [&] {
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclInternalError;
      return state != ncclInProgress;
    });
  }
  if (state == ncclSuccess) {
    ncclCommDestroy(comm_);
    comm_ = nullptr;
    return;
  }
  runtime_log().warn("{}: finalize did not complete ({}); aborting", where("shutdown"),
                     result_text(state));
  abort();
}

}  // namespace hvdrun::nccl
