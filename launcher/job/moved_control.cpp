// The control connection of a moved hvdrun (moved_control.h).
#include "launcher/job/moved_control.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hvdrun/error.h"
#include "launcher/output/logging.h"
#include "rendezvous/auth.h"

namespace hvdrun::launcher {
namespace {

constexpr auto kSecretTime = std::chrono::seconds(10);
constexpr std::size_t kMaxSecret = 256;  // the secret (64 hex digits) and its newline

bool forwarded(int signo) {
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) {
    if (s == signo) return true;
  }
  return false;
}

}  // namespace

ControlPort::ControlPort()
    : listen_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)),
      secret_(rdzv::make_secret()) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (!listen_.valid() || ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) ||
      ::listen(listen_.get(), 8)) {
    throw Error(std::string("cannot listen for the moved hvdrun: ") + std::strerror(errno));
  }
  socklen_t size = sizeof addr;
  ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &size);
  port_ = ntohs(addr.sin_port);
}

void ControlPort::accept_one() {
  UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid() || link_.valid()) return;
  // The secret and a newline, within kSecretTime and kMaxSecret bytes.
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + kSecretTime;
  while (got.size() < kMaxSecret && got.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buffer[kMaxSecret];
    const ssize_t n = ::read(fd.get(), buffer, kMaxSecret - got.size());
    if (n <= 0) return;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  if (got != secret_ + "\n") return;
  link_ = std::move(fd);
}

bool ControlPort::send(int signo) {
  if (!link_.valid()) return false;
  const char byte = static_cast<char>(signo);
  return ::send(link_.get(), &byte, 1, MSG_NOSIGNAL) == 1;
}

ControlLink::ControlLink(const std::map<std::string, std::string>& env)
    : stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  const auto port = env.find(kSlurmControlPort);
  const auto secret = env.find(kSlurmControlSecret);
  const auto host = env.find("SLURM_LAUNCH_NODE_IPADDR");
  if (port == env.end() || secret == env.end() || host == env.end()) return;
  fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(port->second.c_str())));
  const std::string line = secret->second + "\n";
  if (::inet_pton(AF_INET, host->second.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::send(fd_.get(), line.data(), line.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(line.size())) {
    note("warning: cannot reach the hvdrun this one moved from (" + host->second + ":" +
         port->second + "): signals sent to it will end the job at once");
    fd_.reset();
    return;
  }
  thread_ = std::thread([this] { run(); });
}

ControlLink::~ControlLink() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(stop_.get(), &one, sizeof one);
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
