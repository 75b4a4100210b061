// The NCCL backend's error paths on a real GPU, without a second GPU:
//  - init timeout / init abort: rank 0 of a two-rank communicator whose rank 1 never comes;
//    the deadline ends the creation with TimeoutError, a raised AbortSignal with AbortedError
//    within milliseconds;
//  - collective timeout / abort: a spin kernel holds the caller's stream, so the collective
//    queued behind it cannot complete; the error names the operation and rank, the
//    communicator is aborted and later calls say so. ncclCommAbort itself returns only once
//    the kernel ahead of NCCL's has finished, which the timings show;
//  - re-form: after the aborts, a new communicator on the same device works (what an elastic
//    generation does);
//  - revoke: where NCCL has ncclCommRevoke, an aborted wait revokes the communicator instead,
//    which stays for the next generation's shrink (one GPU cannot show the shrink itself).
// Prints one line per check with its timings. Exit 0: all passed; 1: a check failed; 77: no
// CUDA device.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hvdrun/error.h"
#include "tests/gpu/spin_kernel.h"
#include "worker-runtime/abort_signal.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/nccl/cuda_util.h"
#include "worker-runtime/nccl/nccl_backend.h"
#include "worker-runtime/nccl/nccl_comm.h"
#include "worker-runtime/nccl/nccl_extensions.h"

namespace {

using hvdrun::AbortedError;
using hvdrun::AbortSignal;
using hvdrun::BackendError;
using hvdrun::DataType;
using hvdrun::ReduceOp;
using hvdrun::TimeoutError;
using hvdrun::nccl::BackendSettings;
using hvdrun::nccl::NcclBackend;
using hvdrun::nccl::NcclComm;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kCount = 1 << 20;
constexpr double kSpinSeconds = 1.0;

struct Checks {
  int failures = 0;
  void expect(bool ok, const std::string& name, const std::string& detail) {
    std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
    std::fflush(stdout);
    if (!ok) ++failures;
  }
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ncclUniqueId new_id() {
  ncclUniqueId id{};
  if (ncclGetUniqueId(&id) != ncclSuccess) throw BackendError("ncclGetUniqueId failed");
  return id;
}

// The text of what fn() threw: an E's what(), else "wrong error type: ..." or "no error".
template <class E, class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong error type: ") + e.what();
  }
  return "no error";
}

struct Interrupted {
  std::string message;  // fn's AbortedError
  double latency_ms;    // from the raise to fn's return
};

// Raises `signal` with `reason` 200 ms into fn() from another thread.
template <class Fn>
Interrupted abort_during(AbortSignal& signal, const std::string& reason, Fn&& fn) {
  Clock::time_point raised_at{};
  std::thread raiser([&] {
    std::this_thread::sleep_for(milliseconds(200));
    raised_at = Clock::now();
    signal.raise(reason);
  });
  std::string message = error_of<AbortedError>(fn);
  const auto caught_at = Clock::now();
  raiser.join();
  return {std::move(message),
          std::chrono::duration<double, std::milli>(caught_at - raised_at).count()};
}

std::unique_ptr<NcclBackend> make_backend(milliseconds timeout, double* create_ms) {
  const auto start = Clock::now();
  NcclComm comm = NcclComm::create(new_id(), 0, 1, milliseconds(30000));
  *create_ms = ms_since(start);
  BackendSettings settings;
  settings.device = 0;
  settings.timeout = timeout;
  return std::make_unique<NcclBackend>(std::move(comm), settings);
}

// Rank 0 of two, the other never joins: the creation waits until the limit or the abort.
void check_init_timeout(Checks& checks) {
  const auto start = Clock::now();
  const std::string message =
      error_of<TimeoutError>([] { NcclComm::create(new_id(), 0, 2, milliseconds(500)); });
  const double waited = ms_since(start);
  checks.expect(contains(message, "ncclCommInitRankConfig") && contains(message, "rank 0 of 2") &&
                    waited >= 500 && waited < 2500,
                "init-timeout",
                "after " + std::to_string(waited) + " ms (limit 500 ms): " + message);
}

void check_init_abort(Checks& checks) {
  AbortSignal signal;
  const auto [message, latency] = abort_during(signal, "generation 2 broken: rank 1 failed", [&] {
    NcclComm::create(new_id(), 0, 2, milliseconds(30000), &signal);
  });
  checks.expect(contains(message, "aborted: generation 2 broken: rank 1 failed") &&
                    contains(message, "ncclCommInitRankConfig") && latency < 200,
                "init-abort",
                "AbortedError " + std::to_string(latency) +
                    " ms after the signal (ncclCommAbort included): " + message);
}

struct Stream {
  cudaStream_t get = nullptr;
  Stream() { hvdrun::nccl::check_cuda(cudaStreamCreate(&get), "cudaStreamCreate"); }
  ~Stream() {
    cudaStreamSynchronize(get);
    cudaStreamDestroy(get);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

void check_timeout(Checks& checks, void* send, void* recv) {
  double create_ms = 0;
  auto backend = make_backend(milliseconds(300), &create_ms);
  Stream stream;
  hvdrun::nccl::check_cuda(launch_spin(stream.get, kSpinSeconds), "spin kernel");
  const auto allreduce = [&] {
    backend->allreduce(send, recv, kCount, DataType::kFloat32, ReduceOp::kSum, stream.get);
  };
  const auto start = Clock::now();
  const std::string message = error_of<TimeoutError>(allreduce);
  const double waited = ms_since(start);
  checks.expect(contains(message, "allreduce") && contains(message, "rank 0 of 1") &&
                    contains(message, "HVDRUN_TIMEOUT") && waited >= 300 &&
                    waited < kSpinSeconds * 1000 + 1000,
                "timeout",
                "after " + std::to_string(waited) + " ms (limit 300 ms; stream held " +
                    std::to_string(kSpinSeconds) + " s): " + message);
  const std::string later = error_of<BackendError>(allreduce);
  checks.expect(contains(later, "aborted after an earlier failure"), "timeout-then-call", later);
}

// An allreduce queued behind a spin kernel of kSpinSeconds, its abort signal raised 200 ms in.
Interrupted interrupt_held_allreduce(NcclBackend& backend, const std::string& reason, void* send,
                                     void* recv) {
  AbortSignal signal;
  backend.set_abort_signal(&signal);
  Stream stream;
  hvdrun::nccl::check_cuda(launch_spin(stream.get, kSpinSeconds), "spin kernel");
  Interrupted result = abort_during(signal, reason, [&] {
    backend.allreduce(send, recv, kCount, DataType::kFloat32, ReduceOp::kSum, stream.get);
  });
  backend.set_abort_signal(nullptr);
  return result;
}

void check_abort(Checks& checks, void* send, void* recv) {
  double create_ms = 0;
  auto backend = make_backend(milliseconds(30000), &create_ms);
  const auto [message, latency] =
      interrupt_held_allreduce(*backend, "generation 3 broken: rank 1 failed", send, recv);
  checks.expect(contains(message, "aborted: generation 3 broken: rank 1 failed") &&
                    contains(message, "allreduce") && latency < kSpinSeconds * 1000 + 1000,
                "abort",
                "AbortedError " + std::to_string(latency) +
                    " ms after the signal (ncclCommAbort included; stream held " +
                    std::to_string(kSpinSeconds) + " s): " + message);
}

void check_reform(Checks& checks, void* send, void* recv) {
  double create_ms = 0;
  auto backend = make_backend(milliseconds(30000), &create_ms);
  std::vector<float> host(kCount, 1.5f);
  hvdrun::nccl::check_cuda(
      cudaMemcpy(send, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  Stream stream;
  const auto start = Clock::now();
  backend->allreduce(send, recv, kCount, DataType::kFloat32, ReduceOp::kSum, stream.get);
  const double reduce_ms = ms_since(start);
  std::vector<float> out(kCount, 0.0f);
  hvdrun::nccl::check_cuda(
      cudaMemcpy(out.data(), recv, kCount * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  bool right = true;
  for (float v : out) right = right && v == 1.5f;
  checks.expect(right, "re-form",
                "new communicator after the abort: created in " + std::to_string(create_ms) +
                    " ms, first allreduce of " + std::to_string(kCount) + " floats " +
                    std::to_string(reduce_ms) + " ms, result " + (right ? "right" : "WRONG"));
}

// ncclCommShrink needs at least one rank to leave out and a caller that stays, so one GPU
// (one rank) cannot shrink; what it can show is the survivors' first half: the revoke.
void check_revoke(Checks& checks, void* send, void* recv) {
  if (!hvdrun::nccl::NcclExtensions::find().revoke) {
    std::printf("SKIP revoke: this NCCL has no ncclCommRevoke\n");
    return;
  }
  double create_ms = 0;
  auto backend = make_backend(milliseconds(30000), &create_ms);
  const auto [message, latency] =
      interrupt_held_allreduce(*backend, "generation 4 broken: rank 1 failed", send, recv);
  const hvdrun::DeviceCommState state = backend->comm_state();
  checks.expect(contains(message, "communicator revoked") && latency < 200 && state.alive, "revoke",
                "AbortedError " + std::to_string(latency) + " ms after the signal, communicator " +
                    (state.alive ? "kept for a shrink" : "GONE") + ": " + message);
  const std::string shrink = error_of<hvdrun::UsageError>(
      [&] { backend->comm().shrink({}, 0, milliseconds(1000), nullptr); });
  checks.expect(contains(shrink, "leaves no rank out"), "shrink-nobody", shrink);
  backend->retire();
  const auto start = Clock::now();
  backend.reset();
  checks.expect(
      true, "retire",
      "revoked communicator dropped in " + std::to_string(ms_since(start)) + " ms (ncclCommAbort)");
}

}  // namespace

int main() {
  const auto devices = hvdrun::nccl::visible_devices();
  if (devices.count <= 0) {
    std::printf("SKIP: no CUDA device visible (%s)\n", devices.error.c_str());
    return 77;
  }
  Checks checks;
  hvdrun::runtime_log().set_level(spdlog::level::debug);  // shows ncclCommAbort's duration
  try {
    hvdrun::nccl::DeviceGuard guard(0);
    hvdrun::nccl::DeviceBuffer send(kCount * sizeof(float), "send");
    hvdrun::nccl::DeviceBuffer recv(kCount * sizeof(float), "recv");
    check_init_timeout(checks);
    check_init_abort(checks);
    check_timeout(checks, send.data(), recv.data());
    check_abort(checks, send.data(), recv.data());
    check_reform(checks, send.data(), recv.data());
    check_revoke(checks, send.data(), recv.data());
  } catch (const std::exception& e) {
    checks.expect(false, "unexpected error", e.what());
  }
  std::printf("nccl_error_paths: %d failure(s)\n", checks.failures);
  return checks.failures == 0 ? 0 : 1;
}
