// A process's view of one generation of the job: its topology and the collective backends
// (the TCP ring for host memory, the NCCL backend for device memory when chosen). The free
// functions of hvdrun.h delegate to the one Communicator held by runtime.cpp; tests create
// several, one per thread, to play many ranks in one process.
// Thread rules: one thread at a time. Lifetime: one generation.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hvdrun/types.h"
#include "worker-runtime/abort_signal.h"
#include "worker-runtime/device_collectives.h"
#include "worker-runtime/tcp/ring.h"

namespace hvdrun {

struct Topology {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
};

class Communicator {
 public:
  // `ring` must match topology.rank and topology.size.
  // `abort` interrupts every wait of this communicator's collectives (the ring's and the device
  // backend's); null: a signal of its own.
  Communicator(Topology topology, std::unique_ptr<tcp::Ring> ring,
               std::shared_ptr<AbortSignal> abort = nullptr);
  // A world of one process: no sockets; collectives copy locally.
  static std::unique_ptr<Communicator> single_process();

  const Topology& topology() const noexcept { return topology_; }
  tcp::Ring& ring() noexcept { return *ring_; }

  // Same contracts as the free functions in hvdrun.h; arguments are checked first
  // (UsageError naming the collective).
  void allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op);
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root);
  std::vector<std::size_t> allgather(const void* send, std::size_t count, DataType dtype,
                                     std::vector<std::byte>& out);
  void barrier();

  // The device-memory backend (null: CPU only) and the one-line reason for the choice.
  void set_device_backend(std::unique_ptr<DeviceCollectives> device, std::string reason);
  DeviceCollectives* device() noexcept { return device_.get(); }
  // With `on` (HVDRUN_CHECK_COLLECTIVES), check_device_call compares each device call's
  // descriptor over the ring before it runs.
  void set_check_device_calls(bool on) noexcept { check_device_calls_ = on; }
  bool check_device_calls() const noexcept { return check_device_calls_; }
  // Before a device collective: a MismatchError naming both sides when the ranks' calls differ
  // (only when set_check_device_calls is on; otherwise nothing).
  void check_device_call(tcp::CollectiveKind kind, DataType dtype, ReduceOp op, std::size_t count,
                         int root = 0);
  // The device backend, retired (see DeviceCollectives::retire), for the next generation.
  std::unique_ptr<DeviceCollectives> take_device_backend() noexcept;
  // Raises the abort signal: any pending collective of this process fails with AbortedError
  // within milliseconds, and this communicator is unusable afterwards. Any thread.
  void abort(const std::string& reason) noexcept { abort_->raise(reason); }
  const AbortSignal& abort_signal() const noexcept { return *abort_; }
  const std::string& backend_reason() const noexcept { return backend_reason_; }

 private:
  Topology topology_;
  std::shared_ptr<AbortSignal> abort_;  // outlives the ring and device backend that watch it
  std::unique_ptr<tcp::Ring> ring_;
  std::unique_ptr<DeviceCollectives> device_;  // destroyed before the ring
  std::string backend_reason_ = "cpu (TCP ring)";
  bool check_device_calls_ = false;
};

}  // namespace hvdrun
