// The simulated workers of the rendezvous scale benchmark (scale_clients.h).
#include "bench/scale_clients.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>

#include "bench/scale_common.h"
#include "rendezvous/auth.h"
#include "rendezvous/protocol.h"

namespace hvdrun::bench::scale {
namespace {

std::string worker_error(const Worker& w, const std::string& what) {
  return "worker " + std::to_string(w.rank) + ": " + what;
}

// Reads until the server's next frame is whole or the socket is empty (as an edge-triggered
// registration asks). The server sends a worker one frame at a time here (the challenge,
// then the assignment), so what has arrived must be that one frame.
std::optional<rdzv::Message> take_frame(Worker& w) {
  for (;;) {
    std::size_t need = rdzv::kHeaderSize;
    if (w.have >= rdzv::kHeaderSize) {
      const auto header = rdzv::decode_header(w.in);
      if (const auto* e = std::get_if<rdzv::DecodeError>(&header)) {
        throw std::runtime_error(worker_error(w, e->text));
      }
      need += std::get<rdzv::Header>(header).length;
      if (w.in.size() < need) w.in.resize(need);
    }
    if (w.have == need) break;
    if (w.have > need) throw std::runtime_error(worker_error(w, "more than one frame at once"));
    const ssize_t got = ::recv(w.fd.get(), w.in.data() + w.have, w.in.size() - w.have, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return std::nullopt;
    if (got < 0) throw std::runtime_error(worker_error(w, std::strerror(errno)));
    if (got == 0) throw std::runtime_error(worker_error(w, "the server closed the connection"));
    w.have += static_cast<std::size_t>(got);
  }
  auto decoded = rdzv::decode(std::span(w.in.data(), w.have));
  w.have = 0;
  if (const auto* e = std::get_if<rdzv::DecodeError>(&decoded)) {
    throw std::runtime_error(worker_error(w, e->text));
  }
  return std::get<rdzv::Message>(std::move(decoded));
}

template <class T>
T expect(const rdzv::Message& message, const Worker& w) {
  if (const auto* e = std::get_if<rdzv::ErrorMsg>(&message.body)) {
    throw std::runtime_error(worker_error(w, e->text));
  }
  if (const auto* body = std::get_if<T>(&message.body)) return *body;
  throw std::runtime_error(
      worker_error(w, "unexpected " + rdzv::type_name(rdzv::type_of(message.body))));
}

void check_assignment(const rdzv::Assign& a, const Worker& w, int n) {
  const int rank = w.rank;
  const hvdrun::Slot s = slot_of(rank, n);
  const bool place = a.rank == rank && a.size == n && a.local_rank == s.local_rank &&
                     a.local_size == s.local_size && a.cross_rank == s.cross_rank &&
                     a.cross_size == s.cross_size;
  if (!place || a.prev != data_of((rank + n - 1) % n) || a.next != data_of((rank + 1) % n)) {
    throw std::runtime_error(worker_error(
        w, "wrong assignment (rank " + std::to_string(a.rank) + ", next " + a.next.addr + ")"));
  }
}

// Connects worker `rank` and registers it; its challenge makes it readable.
void connect_worker(Clients& c, int rank) {
  if (rank >= c.end) return;
  auto& w = *c.workers.emplace_back(std::make_unique<Worker>());
  w.rank = rank;
  w.fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!w.fd) throw std::runtime_error(worker_error(w, std::strerror(errno)));
  // The port is picked at connect, for the whole address pair (a bind to port 0 would search
  // every port in use, the TIME_WAIT ones of earlier runs included).
  const int on = 1;
  ::setsockopt(w.fd.get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = htonl(0x7F010000u + static_cast<unsigned>(rank));
  epoll_event event{};
  event.events = EPOLLIN | EPOLLET;
  event.data.ptr = &w;
  if (::bind(w.fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0 ||
      (::connect(w.fd.get(), reinterpret_cast<const sockaddr*>(&c.server), sizeof c.server) != 0 &&
       errno != EINPROGRESS) ||
      ::epoll_ctl(c.epoll.get(), EPOLL_CTL_ADD, w.fd.get(), &event) != 0) {
    throw std::runtime_error(worker_error(w, std::strerror(errno)));
  }
}

// Answers the challenge as libhvdrun does: Auth (unanswered unless wrong) and Join in one write.
void answer(Clients& c, Worker& w, const rdzv::Message& hello) {
  const auto challenge = expect<rdzv::Challenge>(hello, w);
  std::vector<std::uint8_t> frames = rdzv::encode(
      {0, rdzv::Auth{rdzv::compute_mac(c.secret, rdzv::kRendezvousAuthContext, challenge.nonce)}});
  const rdzv::PeerAddr data = data_of(w.rank);
  const std::vector<std::uint8_t> join_frame =
      rdzv::encode({hello.generation, rdzv::Join{static_cast<std::uint32_t>(w.rank), c.pid,
                                                 slot_of(w.rank, c.n).host, data.addr, data.port}});
  frames.insert(frames.end(), join_frame.begin(), join_frame.end());
  const ssize_t sent = ::send(w.fd.get(), frames.data(), frames.size(), MSG_NOSIGNAL);
  if (sent < 0) throw std::runtime_error(worker_error(w, std::strerror(errno)));
  // A fresh connection's send buffer takes two small frames whole.
  if (static_cast<std::size_t>(sent) != frames.size()) {
    throw std::runtime_error(worker_error(w, "short send"));
  }
}

// Serves what worker `w` was sent: its challenge (answered, and the next worker of its lane
// started) or its assignment, which comes only once every worker joined.
void on_readable(Clients& c, Worker& w) {
  if (w.step == Worker::Step::kDone) return;
  const std::optional<rdzv::Message> message = take_frame(w);
  if (!message) return;
  if (w.step == Worker::Step::kChallenge) {
    answer(c, w, *message);
    w.step = Worker::Step::kAssignment;
    connect_worker(c, w.rank + kLanes);
    return;
  }
  check_assignment(expect<rdzv::Assign>(*message, w), w, c.n);
  w.step = Worker::Step::kDone;
  c.last_ns = std::max(c.last_ns, now_ns());
  ++c.assigned;
}

// Runs every worker of `c` to its assignment; throws the first error.
void run_workers(Clients& c) {
  c.epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!c.epoll) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  c.workers.reserve(static_cast<std::size_t>(c.end - c.first));
  for (int rank = c.first; rank < std::min(c.end, c.first + kLanes); ++rank) {
    connect_worker(c, rank);
  }
  std::array<epoll_event, 256> events{};
  const auto deadline = Clock::now() + kWait;
  while (c.assigned < c.end - c.first) {
    const int ready = ::epoll_wait(c.epoll.get(), events.data(), events.size(), 1000);
    if (ready < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
    }
    if (Clock::now() > deadline) {
      throw std::runtime_error(std::to_string(c.end - c.first - c.assigned) +
                               " workers got no assignment within " +
                               std::to_string(kWait.count()) + " s");
    }
    for (int i = 0; i < ready; ++i) on_readable(c, *static_cast<Worker*>(events[i].data.ptr));
  }
}

}  // namespace

int run_clients(Clients& c, int go_fd, int report_fd) {
  char byte = 0;
  (void)hvdrun::read_some(go_fd, &byte, 1);
  const std::int64_t cpu_before = cpu_ns();
  std::string error;
  try {
    run_workers(c);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const std::int64_t cpu = cpu_ns() - cpu_before;
  // Reset rather than close, whenever this process ends: no TIME_WAIT left behind to slow
  // the next run down.
  const linger reset{1, 0};
  for (auto& w : c.workers) ::setsockopt(w->fd.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  report(report_fd, "done " + std::to_string(c.assigned) + " " + std::to_string(c.last_ns) + " " +
                        std::to_string(cpu) + " " + error);
  return 0;
}

}  // namespace hvdrun::bench::scale
