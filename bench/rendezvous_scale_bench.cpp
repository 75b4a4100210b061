// Rendezvous at scale: N simulated workers join one rendezvous server and receive their
// assignments. The server is the launcher's own (rdzv::Server, set up as hvdrun sets it up
// for -np N, here 8 slots per host) in a process of its own. The workers are spread over P
// client processes, each a single-threaded epoll loop that holds N/P connections and opens
// at most kLanes of them at a time. Each worker connects from a loopback address of its own
// (127.1.x.y), so that the kernel's search for a free source port does not grow with N, and
// does what libhvdrun does: it answers the challenge, sends its Join in the same write, and
// reads its ASSIGN, which is checked (rank, size, topology and both ring neighbours).
//
// Prints one line: the time from the start signal to the last assignment received, the time
// at which the server saw the generation complete, the server's CPU time until then, the
// client processes' CPU time, and the server's resident memory per worker (its growth from
// before listening until the generation completed, divided by N).
//
// usage: rendezvous_scale_bench N [client_processes=1]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/number.h"
#include "common/unique_fd.h"
#include "rendezvous/auth.h"
#include "rendezvous/server.h"

namespace {

namespace asio = boost::asio;
namespace rdzv = hvdrun::rdzv;
using hvdrun::bench::number;
using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one time line for every process

constexpr int kSlotsPerHost = 8;
constexpr int kLanes = 256;                 // connections a client process opens at once
constexpr std::chrono::seconds kWait{300};  // for any one report of a child

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// CPU time this process used so far (user and system), in ns.
std::int64_t cpu_ns() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto ns = [](const timeval& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_usec * 1000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

hvdrun::Slot slot_of(int rank, int n) {
  const int host = rank / kSlotsPerHost;
  const int hosts = (n + kSlotsPerHost - 1) / kSlotsPerHost;
  const int local_size = std::min(kSlotsPerHost, n - host * kSlotsPerHost);
  return {rank,
          rank % kSlotsPerHost,
          local_size,
          host,
          hosts,
          host,
          hosts,
          static_cast<std::size_t>(host),
          "host-" + std::to_string(host)};
}

// Each simulated worker advertises a data listener of its own (nothing listens there).
rdzv::PeerAddr data_of(int rank) {
  return {"10." + std::to_string(rank >> 16) + "." + std::to_string((rank >> 8) & 255) + "." +
              std::to_string(rank & 255),
          static_cast<std::uint16_t>(1024 + rank % 60000)};
}

void raise_fd_limit(rlim_t need) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur >= need) return;
  limit.rlim_cur = need;
  limit.rlim_max = std::max(limit.rlim_max, need);
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    throw std::runtime_error("needs " + std::to_string(need) +
                             " open files and cannot raise the limit (ulimit -n): run as root "
                             "or raise the hard limit");
  }
}

// One line from `fd`, waiting at most kWait.
std::string read_line(int fd, const std::string& from) {
  std::string line;
  const auto deadline = Clock::now() + kWait;
  char c = 0;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    if (hvdrun::read_some(fd, &c, 1) != 1) throw std::runtime_error(from + " ended early");
    if (c == '\n') return line;
    line += c;
  }
  throw std::runtime_error(from + " did not report within " + std::to_string(kWait.count()) + " s");
}

void report(int fd, const std::string& line) {
  if (hvdrun::write_all(fd, line + "\n") != 0) std::_Exit(3);
}

// The server process: reports "port P", then "complete T RSS_GROWTH CPU" (T and its CPU time
// since it started to listen in ns, RSS_GROWTH in bytes); runs until SIGTERM.
int run_server(int n, const std::string& secret, int report_fd) {
  const std::size_t before = resident_bytes();
  const std::int64_t cpu_before = cpu_ns();
  asio::io_context io;
  rdzv::ServerOptions options;
  options.secret = secret;
  for (int r = 0; r < n; ++r) options.slots.push_back(slot_of(r, n));
  options.start_timeout = std::chrono::seconds(120);
  // Every worker may wait to authenticate at once, as hvdrun allows when its open-file limit
  // leaves room (the bench raises it).
  options.max_unauthenticated = std::max<std::size_t>(options.max_unauthenticated, n);
  rdzv::Server server(
      io, std::move(options),
      rdzv::ServerCallbacks{[&](const rdzv::JobError& e) {
                              report(report_fd, "error " + e.message);
                              io.stop();
                            },
                            [&] {
                              report(report_fd, "complete " + std::to_string(now_ns()) + " " +
                                                    std::to_string(resident_bytes() - before) +
                                                    " " + std::to_string(cpu_ns() - cpu_before));
                            },
                            nullptr, nullptr});
  asio::signal_set stop(io, SIGTERM);
  stop.async_wait([&](auto, int) { io.stop(); });
  report(report_fd, "port " + std::to_string(server.port()));
  io.run();
  return 0;
}

// One simulated worker: its connection and what it has read of the server's current frame.
struct Worker {
  enum class Step { kChallenge, kAssignment, kDone };
  hvdrun::UniqueFd fd;
  int rank = 0;
  Step step = Step::kChallenge;
  std::vector<std::uint8_t> in = std::vector<std::uint8_t>(256);
  std::size_t have = 0;
};

// One client process: workers [first, end), on one edge-triggered epoll set. (Not an Asio
// loop: its reactor spends a system call per wait that finds nothing, which here would cost
// the server's core a share of its time.)
struct Clients {
  hvdrun::UniqueFd epoll;
  sockaddr_in server{};
  std::string secret;
  int n = 0, first = 0, end = 0;
  std::uint32_t pid = static_cast<std::uint32_t>(::getpid());
  std::vector<std::unique_ptr<Worker>> workers;  // kept open until the process ends
  int assigned = 0;
  std::int64_t last_ns = 0;
};

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

// Waits for the start (EOF on `go`), runs the workers and reports
// "done ASSIGNED LAST_NS CPU_NS [error]" (CPU_NS: the CPU time its workers took).
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

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Forks a child that runs fn() and exits with its status.
template <class Fn>
pid_t fork_child(Fn&& fn) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid > 0) return pid;
  int status = 1;
  try {
    status = fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_scale_bench: %s\n", e.what());
  }
  std::_Exit(status);
}

// Ends and reaps the children, whatever happened: the last started first, so that the
// client processes are gone (their connections reset) before the server closes its side.
struct Children {
  std::vector<pid_t> pids;
  ~Children() {
    for (auto it = pids.rbegin(); it != pids.rend(); ++it) {
      ::kill(*it, SIGTERM);
      ::waitpid(*it, nullptr, 0);
    }
  }
};

int run(int n, int processes) {
  raise_fd_limit(static_cast<rlim_t>(n) + 256);
  const std::string secret = rdzv::make_secret();
  Children children;
  hvdrun::Pipe server_report = hvdrun::make_pipe();
  children.pids.push_back(fork_child([&] {
    server_report.read.reset();
    return run_server(n, secret, server_report.write.get());
  }));
  server_report.write.reset();
  const auto port_line = words(read_line(server_report.read.get(), "the server"));
  if (port_line.size() != 2 || port_line[0] != "port") {
    throw std::runtime_error("the server: " + (port_line.empty() ? "" : port_line.back()));
  }
  const auto port = static_cast<std::uint16_t>(number(port_line[1]));

  hvdrun::Pipe go = hvdrun::make_pipe();
  hvdrun::Pipe client_report = hvdrun::make_pipe();
  for (int p = 0; p < processes; ++p) {
    children.pids.push_back(fork_child([&] {
      go.write.reset();
      client_report.read.reset();
      Clients c;
      c.server.sin_family = AF_INET;
      c.server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      c.server.sin_port = htons(port);
      c.secret = secret;
      c.n = n;
      c.first = static_cast<int>(static_cast<long long>(n) * p / processes);
      c.end = static_cast<int>(static_cast<long long>(n) * (p + 1) / processes);
      return run_clients(c, go.read.get(), client_report.write.get());
    }));
  }
  go.read.reset();
  client_report.write.reset();
  const std::int64_t start = now_ns();
  go.write.reset();  // every client process reads EOF: start

  std::int64_t last = 0;
  long long assigned = 0;
  std::int64_t clients_cpu = 0;
  for (int p = 0; p < processes; ++p) {
    const std::string line = read_line(client_report.read.get(), "a client process");
    const auto w = words(line);
    if (w.size() < 4 || w[0] != "done") throw std::runtime_error("a client process: " + line);
    if (w.size() > 4) {  // "done ASSIGNED LAST_NS CPU_NS error text"
      std::string why;
      for (std::size_t i = 4; i < w.size(); ++i) why += (i > 4 ? " " : "") + w[i];
      throw std::runtime_error("a client process failed: " + why);
    }
    assigned += number(w[1]);
    last = std::max<std::int64_t>(last, number(w[2]));
    clients_cpu += number(w[3]);
  }
  if (assigned != n) {
    throw std::runtime_error(std::to_string(assigned) + " of " + std::to_string(n) +
                             " workers got an assignment");
  }
  const auto done = words(read_line(server_report.read.get(), "the server"));
  if (done.size() != 4 || done[0] != "complete") {
    throw std::runtime_error("the server did not complete the generation");
  }
  const double complete_ms = static_cast<double>(number(done[1]) - start) / 1e6;
  const double last_ms = static_cast<double>(last - start) / 1e6;
  const long long grown = number(done[2]);
  std::printf(
      "workers %d  client_processes %d  last_assignment_ms %.1f  server_complete_ms %.1f  "
      "server_cpu_ms %.1f  clients_cpu_ms %.1f  server_rss_growth_mib %.1f  "
      "server_bytes_per_worker %.0f\n",
      n, processes, last_ms, complete_ms, static_cast<double>(number(done[3])) / 1e6,
      static_cast<double>(clients_cpu) / 1e6, static_cast<double>(grown) / (1 << 20),
      static_cast<double>(grown) / n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2 || argc > 3) {
      std::fprintf(stderr, "usage: rendezvous_scale_bench N [client_processes=1]\n");
      return 2;
    }
    const long long n = number(argv[1], "N");
    const long long processes = argc > 2 ? number(argv[2], "client_processes") : 1;
    if (n < 1 || n > static_cast<long long>(rdzv::kMaxPeers)) {
      throw std::runtime_error("N " + std::string(argv[1]) + " is outside 1.." +
                               std::to_string(rdzv::kMaxPeers));
    }
    if (processes < 1 || processes > 200 || processes > n) {
      throw std::runtime_error("client_processes " + std::to_string(processes) +
                               " is outside 1..min(200, N)");
    }
    return run(static_cast<int>(n), static_cast<int>(processes));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_scale_bench: %s\n", e.what());
    return 1;
  }
}
