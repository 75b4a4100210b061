// Horovod-like test clients (horovod_http_client.h) over blocking POSIX sockets with
// SO_RCVTIMEO / SO_SNDTIMEO timeouts.
#include "tests/horovod/horovod_http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace hvdrun::launcher::horovod::test {
namespace {

using Clock = std::chrono::steady_clock;

// A blocking TCP socket connected to 127.0.0.1:port, or an empty one with errno in `error`.
UniqueFd connect_loopback(std::uint16_t port, std::chrono::milliseconds timeout, int& error) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    error = errno;
    return fd;
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    error = errno;
    fd.reset();
  }
  return fd;
}

bool send_all(int fd, std::string_view data, HttpResponse& out) {
  while (!data.empty()) {
    const auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.error = errno;
      out.timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// recv() with EINTR retried: bytes, 0 at EOF, -1 with errno.
long receive(int fd, char* buffer, std::size_t size) {
  for (;;) {
    const auto n = ::recv(fd, buffer, size, 0);
    if (n >= 0 || errno != EINTR) return static_cast<long>(n);
  }
}

// Parses the head like HTTPRequest.hpp: the status is the second space-separated token of
// the first line; "Content-Length" is matched case-sensitively.
void parse_head(HttpResponse& out) {
  const auto first_end = out.head.find("\r\n");
  const std::string first = out.head.substr(0, first_end);
  const auto space = first.find(' ');
  if (space != std::string::npos) {
    try {
      out.status = std::stoi(first.substr(space + 1));
    } catch (const std::exception&) {
      out.status = 0;
    }
  }
  std::size_t pos = first_end == std::string::npos ? out.head.size() : first_end + 2;
  while (pos < out.head.size()) {
    auto end = out.head.find("\r\n", pos);
    if (end == std::string::npos) end = out.head.size();
    const std::string line = out.head.substr(pos, end - pos);
    pos = end + 2;
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.substr(0, colon) != "Content-Length") continue;
    out.content_length = std::stoul(line.substr(colon + 1));
  }
}

// Reads the response; stops when Content-Length bytes of body have arrived (as Horovod
// does), then checks once that the server closes the connection.
void read_response(int fd, HttpResponse& out) {
  std::string data;
  char buffer[4096];
  bool head_done = false;
  for (;;) {
    if (head_done && out.content_length && out.body.size() >= *out.content_length) break;
    const long n = receive(fd, buffer, sizeof buffer);
    if (n < 0) {
      out.error = errno;
      out.timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
      return;
    }
    if (n == 0) {
      out.closed_after = true;
      break;
    }
    if (head_done) {
      out.body.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    data.append(buffer, static_cast<std::size_t>(n));
    const auto end = data.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    out.head = data.substr(0, end + 2);
    out.body = data.substr(end + 4);
    head_done = true;
    parse_head(out);
  }
  if (!head_done) {
    out.head = data;
    parse_head(out);
    return;
  }
  if (!out.closed_after) out.closed_after = receive(fd, buffer, sizeof buffer) == 0;
}

}  // namespace

HttpResponse http_request(std::uint16_t port, std::string_view method, std::string_view path,
                          std::string_view body, std::chrono::milliseconds timeout) {
  std::string request;
  request.reserve(128 + body.size());
  request.append(method).append(" ").append(path).append(" HTTP/1.1\r\n");
  request.append("Host: 127.0.0.1\r\n");
  request.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n\r\n");
  request.append(body);
  return raw_exchange(port, request, timeout);
}

HttpResponse raw_exchange(std::uint16_t port, std::string_view bytes,
                          std::chrono::milliseconds timeout) {
  HttpResponse out;
  UniqueFd fd = connect_loopback(port, timeout, out.error);
  if (!fd) return out;
  if (!send_all(fd.get(), bytes, out)) {
    // The server may have answered and closed before taking everything: read what it sent.
    out.error = 0;
  }
  read_response(fd.get(), out);
  return out;
}

RawConnection::RawConnection(std::uint16_t port) : opened_(Clock::now()) {
  int error = 0;
  fd_ = connect_loopback(port, 5s, error);
  if (!fd_) throw std::runtime_error(std::string("connect: ") + std::strerror(error));
}

void RawConnection::send(std::string_view bytes) {
  HttpResponse ignored;
  if (!send_all(fd_.get(), bytes, ignored)) {
    throw std::runtime_error(std::string("send: ") + std::strerror(ignored.error));
  }
}

std::optional<std::chrono::milliseconds> RawConnection::wait_closed(
    std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char buffer[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd_.get(), POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long>(left.count(), 0))) <= 0) continue;
    const long n = receive(fd_.get(), buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - opened_);
    }
  }
  return std::nullopt;
}

HttpResponse HorovodStore::perform(std::string_view method, const std::string& key,
                                   std::string_view body) {
  const std::string path = "/" + scope_ + "/" + key;
  HttpResponse last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    last = http_request(port_, method, path, body);
    if (last.status == 200 || last.status == 404) return last;
    std::this_thread::sleep_for(500ms);
  }
  throw std::runtime_error(std::string(method) + " " + path + " failed: status " +
                           std::to_string(last.status) + ", " + std::strerror(last.error));
}

void HorovodStore::set(const std::string& key, std::string_view value) {
  perform("PUT", key, value);
}

std::optional<std::string> HorovodStore::get(const std::string& key) {
  auto response = perform("GET", key, {});
  if (response.status == 404) return std::nullopt;
  return std::move(response.body);
}

void HorovodStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  for (;;) {
    bool all = true;
    for (const auto& key : keys) {
      if (!get(key)) {
        all = false;
        break;
      }
    }
    if (all) return;
    if (Clock::now() - start > timeout) {
      throw std::runtime_error("Wait timeout after " + std::to_string(timeout.count()) +
                               " ms for keys in " + scope_);
    }
    std::this_thread::sleep_for(10ms);
  }
}

void HorovodStore::finalize(int rank) {
  perform("DELETE", std::to_string(rank), {});
}

}  // namespace hvdrun::launcher::horovod::test
