// NcclComm (see nccl_comm.h). Waits are poll_until (poll_until.h): bounded by the deadline,
// interrupted by the abort signal.
#include "worker-runtime/nccl/nccl_comm.h"

#include <thread>
#include <utility>

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
      abort_signal_(other.abort_signal_) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, nullptr);
    rank_ = other.rank_;
    size_ = other.size_;
    broken_ = std::move(other.broken_);
    abort_signal_ = other.abort_signal_;
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

void NcclComm::aborted(const char* op) {
  const auto reason = abort_signal_->reason();
  const std::string message = where(op) + ": aborted: " + reason + "; communicator aborted";
  if (broken_.empty()) broken_ = "aborted: " + reason;
  runtime_log().info("{}", message);
  abort();
  throw AbortedError(message);
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
