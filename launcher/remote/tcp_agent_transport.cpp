// The agent's stream over TCP (tcp_agent_transport.h).
#include "launcher/remote/tcp_agent_transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvdrun::launcher::remote {

TcpAgentTransport::TcpAgentTransport(UniqueFd fd, std::string where, std::string already_read)
    : fd_(std::move(fd)), where_(std::move(where)), already_read_(std::move(already_read)) {
  ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
  const int one = 1;  // frames are small and answered: no wait for more to send
  ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool TcpAgentTransport::step(const Sink& sink) {
  if (ended_) return false;
  bool moved = false;
  if (!already_read_.empty()) {
    sink(StreamKind::kStdout, already_read_);
    already_read_.clear();
    moved = true;
  }
  while (!pending_.empty()) {
    const ssize_t n = ::send(fd_.get(), pending_.data(), pending_.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      ended_ = "the connection to the node agent on " + where_ + " broke: " + std::strerror(errno);
      return true;
    }
    pending_.erase(0, static_cast<std::size_t>(n));
    moved = true;
  }
  char buffer[64 * 1024];
  for (int i = 0; i < 16; ++i) {  // bounded, so writes and other work interleave
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      ended_ = n == 0 ? "the node agent on " + where_ + " closed its connection"
                      : "the connection to the node agent on " + where_ +
                            " broke: " + std::strerror(errno);
      return true;
    }
    sink(StreamKind::kStdout, std::string_view(buffer, static_cast<std::size_t>(n)));
    moved = true;
  }
  return moved;
}

pollfd TcpAgentTransport::poll_entry(int& timeout_ms) {
  if (!already_read_.empty()) timeout_ms = 0;
  return {fd_.get(), static_cast<short>(POLLIN | (pending_.empty() ? 0 : POLLOUT)), 0};
}

}  // namespace hvdrun::launcher::remote
