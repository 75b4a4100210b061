// The signals of an hvdrun that moved into its Slurm allocation (slurm_relocation.h), carried
// to the moved hvdrun over one TCP connection: srun cannot pass them (a SIGTERM to srun kills
// the step at once), and `scancel --signal` would signal every process of the step (the
// agents' srun among them). The hvdrun that moved listens (ControlPort); the moved one
// connects back to the address srun ran from ($SLURM_LAUNCH_NODE_IPADDR) within 5 s, both
// prove a secret of this move with the node agents' handshake (agent_auth.h), and the moved
// one raises each signal it is then sent on itself (ControlLink), so that it acts there as it
// would have here. The port's connections are taken by an AuthenticatedAcceptor: strangers
// that connect and say nothing neither delay nor crowd out the moved hvdrun.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "launcher/remote/authenticated_acceptor.h"
#include "launcher/spec/slurm_allocation.h"

namespace hvdrun::launcher {

class ControlPort {
 public:
  // Listens on every address, on a free port; throws hvdrun::Error.
  explicit ControlPort(remote::AuthenticatedAcceptor::Limits limits = {16});
  ~ControlPort() = default;  // the acceptor goes first: it ends the handshakes and joins
  ControlPort(const ControlPort&) = delete;
  ControlPort& operator=(const ControlPort&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  const std::string& secret() const noexcept { return secret_; }
  // Once a connection proved the secret. The latest one that did is kept: the moved hvdrun
  // connects for each of its runs (--preflight's probes, then the job).
  bool connected() const;
  // Sends `signo` to the moved hvdrun; false without a connection (or with one that closed).
  bool send(int signo);
  // Connections waiting for their proof now.
  std::size_t unproven() const { return acceptor_->unproven(); }

 private:
  std::uint16_t port_ = 0;
  std::string secret_;
  mutable std::mutex mutex_;
  UniqueFd link_;
  std::unique_ptr<remote::AuthenticatedAcceptor> acceptor_;  // last: its threads use link_
};

// In the moved hvdrun: connects (if the environment names a control port) and raises what
// comes. Build it once the job's signal handlers are in place, and destroy it before them.
// Destruction closes the connection and joins its thread.
class ControlLink {
 public:
  explicit ControlLink(const std::map<std::string, std::string>& env);
  ~ControlLink();
  ControlLink(const ControlLink&) = delete;
  ControlLink& operator=(const ControlLink&) = delete;

 private:
  void run();
  void unreachable(const std::string& why);
  UniqueFd fd_;
  UniqueFd stop_;  // eventfd
  std::thread thread_;
};

}  // namespace hvdrun::launcher
