// AbortSignal: interrupts every blocking wait of the runtime from outside. Any thread may
// raise() it (the rendezvous push of a broken generation, a signal handler's helper thread,
// a test); the TCP ring's poll sets watch its eventfd and the NCCL completion loop checks it,
// so a pending collective fails with AbortedError within milliseconds instead of after
// HVDRUN_TIMEOUT. It stays raised until reset(). Thread-safe; owns its eventfd.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "common/unique_fd.h"

namespace hvdrun {

class AbortSignal {
 public:
  // Throws Error naming eventfd if it cannot be created.
  AbortSignal();
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;

  // The first reason given is kept. Never throws.
  void raise(const std::string& reason) noexcept;
  void reset();
  bool raised() const noexcept { return raised_.load(std::memory_order_acquire); }
  std::string reason() const;
  // Readable while raised: for poll().
  int fd() const noexcept { return fd_.get(); }
  // Throws AbortedError "<what>: aborted: <reason>" if raised.
  void check(const std::string& what) const;

 private:
  UniqueFd fd_;
  std::atomic<bool> raised_{false};
  mutable std::mutex mutex_;
  std::string reason_;
};

}  // namespace hvdrun
