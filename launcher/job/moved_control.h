// The signals of an hvdrun that moved into its Slurm allocation (slurm_relocation.h), carried
// to the moved hvdrun over one TCP connection: srun cannot pass them (a SIGTERM to srun kills
// the step at once), and `scancel --signal` would signal every process of the step (the
// agents' srun among them). The hvdrun that moved listens (ControlPort); the moved one
// connects back to the address srun ran from ($SLURM_LAUNCH_NODE_IPADDR), proves the secret
// both were given, and raises each signal it is sent on itself (ControlLink), so that it acts
// there as it would have here. Input before the secret is bounded (256 bytes, 10 s).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "launcher/spec/slurm_allocation.h"

namespace hvdrun::launcher {

class ControlPort {
 public:
  ControlPort();  // listens on every address, on a free port; throws hvdrun::Error
  std::uint16_t port() const noexcept { return port_; }
  const std::string& secret() const noexcept { return secret_; }
  // Takes a pending connection that proves the secret (never blocks: call it when poll says
  // the listening descriptor is readable). Others are closed.
  void accept_one();
  int listen_fd() const noexcept { return listen_.get(); }
  bool connected() const noexcept { return link_.valid(); }
  // Sends `signo` to the moved hvdrun; false without a connection.
  bool send(int signo);

 private:
  UniqueFd listen_;
  UniqueFd link_;
  std::uint16_t port_ = 0;
  std::string secret_;
};

// In the moved hvdrun: connects (if the environment names a control port) and raises what
// comes. Destruction closes the connection and joins its thread.
class ControlLink {
 public:
  explicit ControlLink(const std::map<std::string, std::string>& env);
  ~ControlLink();
  ControlLink(const ControlLink&) = delete;
  ControlLink& operator=(const ControlLink&) = delete;

 private:
  void run();
  UniqueFd fd_;
  UniqueFd stop_;  // eventfd
  std::thread thread_;
};

}  // namespace hvdrun::launcher
