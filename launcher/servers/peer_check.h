// Who is at the other end of a TCP connection accepted on this machine: when the peer's socket
// is on this machine (in this network namespace), the uid that owns it, looked up with the
// kernel's sock_diag (netlink INET_DIAG, one exact lookup by address and port, no scan).
// Horovod's rendezvous takes no credentials; this is how hvdrun keeps other users off it.
#pragma once

#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

namespace hvdrun::launcher {

struct PeerOwner {
  enum class Kind {
    kLocal,        // the peer's socket is on this machine: `uid` owns it
    kNotLocal,     // no such socket here: the peer is another host (or network namespace)
    kUnavailable,  // the lookup itself failed (no sock_diag): `error` says why
  };
  Kind kind = Kind::kUnavailable;
  uid_t uid = 0;
  std::string error;
};

// `local` and `peer`: the accepted connection's two ends, as this machine sees them. Waits at
// most 1 s for the kernel's answer.
PeerOwner peer_owner(const boost::asio::ip::tcp::endpoint& local,
                     const boost::asio::ip::tcp::endpoint& peer);

// Who may use Horovod's rendezvous, which takes no credentials: a process of hvdrun's own user
// on this machine, or one of the job's hosts (`is_job_host`, by address). Where sock_diag is
// missing, everyone is let in, as before, and that is said once.
class PeerGate {
 public:
  explicit PeerGate(std::function<bool(const std::string& address)> is_job_host)
      : is_job_host_(std::move(is_job_host)) {}
  // Empty to serve the connection, else why it is refused.
  std::string admit(const boost::asio::ip::tcp::endpoint& local,
                    const boost::asio::ip::tcp::endpoint& peer);

 private:
  std::function<bool(const std::string& address)> is_job_host_;
  bool warned_ = false;
};

}  // namespace hvdrun::launcher
