// The control connection of a moved hvdrun (moved_control.h).
#include "launcher/slurm/moved_control.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "hvdrun/error.h"
#include "launcher/agent/agent_auth.h"
#include "launcher/output/logging.h"
#include "rendezvous/auth.h"

namespace hvdrun::launcher {
namespace {

using namespace std::chrono_literals;

constexpr auto kHandshakeTime = 10s;
constexpr auto kConnectTime = 5s;

bool forwarded(int signo) {
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) {
    if (s == signo) return true;
  }
  return false;
}

void wake(const UniqueFd& eventfd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(eventfd.get(), &one, sizeof one);
}

// A connection to host:port within `deadline`, or an invalid descriptor.
UniqueFd connect_within(const std::string& host, std::uint16_t port,
                        std::chrono::steady_clock::time_point deadline) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (!fd.valid() || ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return {};
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return {};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd.get(), POLLOUT, 0};
    int error = 0;
    socklen_t size = sizeof error;
    if (::poll(&p, 1, static_cast<int>(std::max<long>(0, left.count()))) != 1 ||
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) {
      return {};
    }
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

ControlPort::ControlPort(remote::AuthenticatedAcceptor::Limits limits)
    : secret_(rdzv::make_secret()) {
  UniqueFd listen(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (!listen.valid() ||
      ::bind(listen.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen.get(), 64) != 0) {
    throw Error(std::string("cannot listen for the moved hvdrun: ") + std::strerror(errno));
  }
  socklen_t size = sizeof addr;
  ::getsockname(listen.get(), reinterpret_cast<sockaddr*>(&addr), &size);
  port_ = ntohs(addr.sin_port);
  // The latest proof wins: the moved hvdrun connects again for each of its runs (--preflight's
  // probes, then the job), each run's link closed when it ends.
  acceptor_ = std::make_unique<remote::AuthenticatedAcceptor>(
      std::move(listen), secret_, limits,
      [this](UniqueFd fd, const remote::AuthenticatedAcceptor::Peer&) {
        std::lock_guard lock(mutex_);
        link_ = std::move(fd);
      },
      nullptr);
}

bool ControlPort::connected() const {
  std::lock_guard lock(mutex_);
  return link_.valid();
}

bool ControlPort::send(int signo) {
  std::lock_guard lock(mutex_);
  if (!link_.valid()) return false;
  // The moved hvdrun never writes: a readable link is one its run closed (between --preflight's
  // run and the job's, before the next link). A byte sent there would be lost.
  pollfd p{link_.get(), POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) != 0) {
    link_.reset();
    return false;
  }
  const char byte = static_cast<char>(signo);
  return ::send(link_.get(), &byte, 1, MSG_NOSIGNAL) == 1;
}

ControlLink::ControlLink(const std::map<std::string, std::string>& env)
    : stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  const auto port = env.find(kSlurmControlPort);
  const auto secret = env.find(kSlurmControlSecret);
  const auto host = env.find("SLURM_LAUNCH_NODE_IPADDR");
  if (port == env.end() || secret == env.end() || host == env.end()) return;
  const auto deadline = std::chrono::steady_clock::now() + kConnectTime;
  const auto number = static_cast<std::uint16_t>(std::atoi(port->second.c_str()));
  // Again while the port closes the connection before its proof (strangers' connections
  // displaced this one), within the connect time.
  for (;;) {
    fd_ = connect_within(host->second, number, deadline);
    try {
      if (!fd_.valid()) throw NetworkError("no connection within 5 s");
      agent::agent_handshake(fd_.get(), secret->second, deadline + kHandshakeTime);
      break;
    } catch (const NetworkError& e) {
      if (std::chrono::steady_clock::now() < deadline && fd_.valid()) {
        std::this_thread::sleep_for(50ms);
        continue;
      }
      unreachable(host->second + ":" + port->second + ": " + e.what());
      return;
    } catch (const Error& e) {
      unreachable(host->second + ":" + port->second + ": " + e.what());
      return;
    }
  }
  thread_ = std::thread([this] { run(); });
}

void ControlLink::unreachable(const std::string& why) {
  note("warning: cannot reach the hvdrun this one moved from (" + why +
       "): a signal sent to it ends the job at once");
  fd_.reset();
}

ControlLink::~ControlLink() {
  wake(stop_);
  if (thread_.joinable()) thread_.join();
}

void ControlLink::run() {
  for (;;) {
    pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    char bytes[16];
    const ssize_t n = ::read(fd_.get(), bytes, sizeof bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the hvdrun it moved from ended
    for (ssize_t i = 0; i < n; ++i) {
      if (forwarded(bytes[i])) ::kill(::getpid(), bytes[i]);
    }
  }
}

}  // namespace hvdrun::launcher
