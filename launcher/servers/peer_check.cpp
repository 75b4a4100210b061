// peer_owner (peer_check.h): one SOCK_DIAG_BY_FAMILY request for the peer's socket.
#include "launcher/servers/peer_check.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

PeerOwner unavailable(const std::string& what) {
  return {PeerOwner::Kind::kUnavailable, 0, what + ": " + std::strerror(errno)};
}

// The address bytes of `address` into `out` (4 for IPv4, 16 for IPv6).
void copy_address(const boost::asio::ip::address& address, __be32 out[4]) {
  if (address.is_v4()) {
    const auto bytes = address.to_v4().to_bytes();
    std::memcpy(out, bytes.data(), bytes.size());
  } else {
    const auto bytes = address.to_v6().to_bytes();
    std::memcpy(out, bytes.data(), bytes.size());
  }
}

}  // namespace

PeerOwner peer_owner(const boost::asio::ip::tcp::endpoint& local,
                     const boost::asio::ip::tcp::endpoint& peer) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!fd.valid()) return unavailable("socket(NETLINK_SOCK_DIAG)");
  const timeval limit{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.header.nlmsg_seq = 1;
  message.request.sdiag_family = peer.address().is_v4() ? AF_INET : AF_INET6;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  // The peer's socket: its source is the peer's end, its destination ours.
  message.request.id.idiag_sport = htons(peer.port());
  message.request.id.idiag_dport = htons(local.port());
  copy_address(peer.address(), message.request.id.idiag_src);
  copy_address(local.address(), message.request.id.idiag_dst);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &message, sizeof message, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0) {
    return unavailable("sock_diag request");
  }
  alignas(nlmsghdr) std::array<char, 8192> reply{};
  const ssize_t got = ::recv(fd.get(), reply.data(), reply.size(), 0);
  if (got < static_cast<ssize_t>(sizeof(nlmsghdr))) return unavailable("sock_diag reply");
  const auto* header = reinterpret_cast<const nlmsghdr*>(reply.data());
  if (!NLMSG_OK(header, static_cast<unsigned>(got))) {
    errno = EPROTO;
    return unavailable("sock_diag reply");
  }
  if (header->nlmsg_type == NLMSG_ERROR) {
    const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
    if (error->error == -ENOENT) return {PeerOwner::Kind::kNotLocal, 0, {}};
    errno = -error->error;
    return unavailable("sock_diag lookup");
  }
  if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
      header->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) {
    errno = EPROTO;
    return unavailable("sock_diag reply");
  }
  const auto* found = static_cast<const inet_diag_msg*>(NLMSG_DATA(header));
  return {PeerOwner::Kind::kLocal, static_cast<uid_t>(found->idiag_uid), {}};
}

std::string PeerGate::admit(const boost::asio::ip::tcp::endpoint& local,
                            const boost::asio::ip::tcp::endpoint& peer) {
  const PeerOwner owner = peer_owner(local, peer);
  switch (owner.kind) {
    case PeerOwner::Kind::kLocal:
      if (owner.uid == ::geteuid()) return {};
      return "its process belongs to uid " + std::to_string(owner.uid) +
             ", not to hvdrun's user (uid " + std::to_string(::geteuid()) + ")";
    case PeerOwner::Kind::kNotLocal:
      if (is_job_host_ && is_job_host_(peer.address().to_string())) return {};
      return "it comes from neither this machine nor one of the job's hosts";
    case PeerOwner::Kind::kUnavailable:
      if (!warned_) {
        warned_ = true;
        note("warning: cannot tell who connects to Horovod's rendezvous (" + owner.error +
             "): it serves anyone who can reach its port");
      }
      return {};
  }
  return {};
}

}  // namespace hvdrun::launcher
