// Test helpers: background server thread, slot tables and a raw frame connection.
#include "tests/rendezvous/test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "rendezvous/auth.h"
#include "rendezvous/wire_io.h"

namespace hvdrun::rdzv::test {

std::vector<Slot> make_slots(int n, int per_host) {
  std::vector<Slot> slots(static_cast<std::size_t>(n));
  const int hosts = (n + per_host - 1) / per_host;
  for (int i = 0; i < n; ++i) {
    auto& s = slots[static_cast<std::size_t>(i)];
    s.rank = i;
    s.local_rank = i % per_host;
    s.local_size = std::min(per_host, n - (i / per_host) * per_host);
    s.cross_rank = i / per_host;
    s.cross_size = hosts;
    s.host = "host" + std::to_string(i / per_host);
  }
  return slots;
}

ServerThread::ServerThread(ServerOptions options, ServerCallbacks callbacks)
    : io_([&](boost::asio::io_context& io) {
        if (options.secret.empty()) options.secret = std::string(kSecret);
        options.bind_address = "127.0.0.1";
        options.port = 0;
        return std::make_unique<Server>(io, std::move(options), std::move(callbacks));
      }),
      port_(io_.on_io([](Server& s) { return s.port(); })) {}

std::vector<std::unique_ptr<Client>> join_workers(const ServerThread& server, int n) {
  std::vector<std::unique_ptr<Client>> clients(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      clients[static_cast<std::size_t>(i)] =
          std::make_unique<Client>(server.endpoint(), kSecret, kTimeout);
      clients[static_cast<std::size_t>(i)]->join(make_join(static_cast<std::uint32_t>(i)),
                                                 kTimeout);
    });
  }
  for (auto& t : threads) t.join();
  return clients;
}

Join make_join(std::uint32_t slot) {
  Join j;
  j.slot = slot;
  j.pid = 1000 + slot;
  j.host = "host-of-" + std::to_string(slot);
  j.data_addr = "10.0." + std::to_string(slot / 256) + "." + std::to_string(slot % 256);
  j.data_port = static_cast<std::uint16_t>(20000 + slot);
  return j;
}

ServerOptions slot_options(int n) {
  ServerOptions o;
  o.slots = make_slots(n);
  return o;
}

std::vector<std::uint8_t> frame_header(MsgType type, std::uint32_t length) {
  std::vector<std::uint8_t> out;
  wire::Writer w(out);
  w.u32(kMagic);
  w.u16(kVersion);
  w.u16(static_cast<std::uint16_t>(type));
  w.u32(0);
  w.u32(length);
  w.u32(0);
  return out;
}

std::uint16_t unused_port() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error(std::string("unused_port: ") + std::strerror(errno));
  }
  return ntohs(addr.sin_port);
}

RawConn::RawConn(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int on = 1;  // each send goes out as it is (tests split frames on purpose)
  ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (!fd_ || ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error(std::string("RawConn connect: ") + std::strerror(errno));
  }
}

void RawConn::send_bytes(const std::vector<std::uint8_t>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may already have closed; receive() will tell
    done += static_cast<std::size_t>(n);
  }
}

namespace {
// Reads exactly out.size() bytes; false on EOF, error or timeout.
bool read_all(int fd, std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::recv(fd, out.data() + done, out.size() - done, 0);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace

std::optional<Message> RawConn::receive() {
  std::vector<std::uint8_t> frame(kHeaderSize);
  if (!read_all(fd_.get(), frame)) return std::nullopt;
  auto header = decode_header(frame);
  if (!std::holds_alternative<Header>(header)) throw std::runtime_error("bad header from server");
  frame.resize(kHeaderSize + std::get<Header>(header).length);
  if (!read_all(fd_.get(), std::span(frame).subspan(kHeaderSize))) return std::nullopt;
  auto decoded = decode(frame);
  if (!std::holds_alternative<Message>(decoded)) throw std::runtime_error("bad frame from server");
  return std::get<Message>(std::move(decoded));
}

Message RawConn::authenticate(std::string_view secret) {
  auto challenge = receive();
  if (!challenge || !std::holds_alternative<Challenge>(challenge->body)) {
    throw std::runtime_error("no challenge from server");
  }
  send(Message{0, Auth{compute_mac(secret, "rdzv", std::get<Challenge>(challenge->body).nonce)}});
  return std::move(*challenge);
}

bool RawConn::closed_by_server() {
  std::uint8_t byte = 0;
  return ::recv(fd_.get(), &byte, 1, 0) == 0;
}

bool RawConn::readable_within(std::chrono::milliseconds limit) {
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(limit.count())) == 1;
}

}  // namespace hvdrun::rdzv::test
