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
#include "bench/scale_clients.h"
#include "bench/scale_common.h"
#include "common/unique_fd.h"
#include "rendezvous/auth.h"
#include "rendezvous/server.h"

namespace {

namespace asio = boost::asio;
namespace rdzv = hvdrun::rdzv;
using hvdrun::bench::number;
using namespace hvdrun::bench::scale;

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
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
