// The TCP connection under an SSH session: name resolution and a connect bounded by a
// deadline (non-blocking connect + poll), cancellable from another thread, and the addresses
// of both ends.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "common/unique_fd.h"

namespace hvdrun::launcher::ssh {

using Clock = std::chrono::steady_clock;

// Lets another thread abort a connection in progress: cancel() shuts down the socket that
// the owning thread attached (so that a blocked libssh2 call returns) and wakes a poll on
// wake_fd(). Thread-safe. The owner must detach() before it closes the attached fd.
class SocketCanceller {
 public:
  SocketCanceller();
  SocketCanceller(const SocketCanceller&) = delete;
  SocketCanceller& operator=(const SocketCanceller&) = delete;

  void attach(int fd);
  void detach();
  void cancel();
  bool cancelled() const;
  int wake_fd() const noexcept { return wake_.get(); }  // readable once cancelled

 private:
  mutable std::mutex mutex_;
  UniqueFd wake_;
  int fd_ = -1;
  bool cancelled_ = false;
};

struct TcpConnection {
  UniqueFd fd;             // blocking, TCP_NODELAY, SO_KEEPALIVE, close-on-exec
  std::string peer;        // "10.213.0.11:22"
  std::string local_addr;  // address of this end, without port ("10.213.0.1")
};

// Connects to host:port, trying each resolved address in turn before `deadline`. `who` names
// the host in messages ("hvdt-h1"). Throws SshError: kResolve, kRefused, kUnreachable,
// kTimeout or kCancelled.
TcpConnection connect_tcp(const std::string& host, int port, const std::string& who,
                          Clock::time_point deadline, SocketCanceller* canceller);

// "addr:port" ("[v6]:port") of a socket's peer, or its own address without port.
std::string peer_address(int fd);
std::string local_address(int fd);

}  // namespace hvdrun::launcher::ssh
