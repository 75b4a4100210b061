// AuthenticatedAcceptor (authenticated_acceptor.h): accept, make room, prove, hand over.
#include "launcher/remote/authenticated_acceptor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "hvdrun/error.h"
#include "launcher/agent/agent_auth.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;
namespace {

constexpr auto kRoomWait = std::chrono::seconds(1);
constexpr auto kNoDescriptorWait = std::chrono::milliseconds(20);

AuthenticatedAcceptor::Peer peer_of(const sockaddr_in& a) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return {text, std::string(text) + ":" + std::to_string(ntohs(a.sin_port))};
}

}  // namespace

AuthenticatedAcceptor::AuthenticatedAcceptor(UniqueFd listening, std::string secret, Limits limits,
                                             Handler handler, RefusalLog refusal_log)
    : secret_(std::move(secret)),
      limits_(limits),
      handler_(std::move(handler)),
      refusal_log_(std::move(refusal_log)),
      listen_(std::move(listening)),
      stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!stop_.valid()) throw Error("cannot create an eventfd for the authenticated port");
  accept_thread_ = std::thread([this] { accept_loop(); });
}

void AuthenticatedAcceptor::close_port() {
  if (!accept_thread_.joinable()) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(stop_.get(), &one, sizeof one);
  accept_thread_.join();  // no connection is taken after this
  listen_.reset();        // a connect is now refused: the peer tries again, elsewhere or later
}

AuthenticatedAcceptor::~AuthenticatedAcceptor() {
  close_port();
  std::unique_lock lock(mutex_);
  stopping_ = true;
  for (const auto& [order, served] : served_) ::shutdown(served.shut.get(), SHUT_RDWR);
  changed_.wait(lock, [this] { return served_.empty(); });
  join_finished(lock);
}

std::size_t AuthenticatedAcceptor::unproven() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(served_.begin(), served_.end(), [](const auto& e) {
    return !e.second.proven && !e.second.displaced;
  }));
}

void AuthenticatedAcceptor::join_finished(std::unique_lock<std::mutex>& lock) {
  std::vector<std::thread> done;
  done.swap(finished_);
  lock.unlock();
  for (auto& thread : done) thread.join();  // each has left the lock: it ends now
  lock.lock();
}

bool AuthenticatedAcceptor::make_room() {
  std::map<std::string, std::size_t> held;  // unproven connections by source address
  for (const auto& [order, served] : served_) {
    if (!served.proven && !served.displaced) ++held[served.address];
  }
  std::size_t unproven = 0;
  for (const auto& [address, count] : held) unproven += count;
  // Threads that are ending (displaced) or past their proof count too, within a wider bound.
  if (served_.size() >= 4 * limits_.max_unproven) return false;
  if (unproven < limits_.max_unproven) return true;
  std::size_t most = 0;
  for (const auto& [address, count] : held) most = std::max(most, count);
  // The oldest unproven connection of an address that holds `most` of them.
  for (auto& [order, served] : served_) {  // ordered by accept order: the oldest first
    if (served.proven || served.displaced || held[served.address] != most) continue;
    served.displaced = true;
    ::shutdown(served.shut.get(), SHUT_RDWR);  // its proof's read ends now
    return true;
  }
  return false;
}

void AuthenticatedAcceptor::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    sockaddr_in from{};
    socklen_t size = sizeof from;
    UniqueFd fd(::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&from), &size, SOCK_CLOEXEC));
    if (!fd.valid()) {
      // Out of descriptors: the pending connection stays queued; try again shortly, not at once.
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(kNoDescriptorWait);
      continue;
    }
    Peer peer = peer_of(from);
    std::unique_lock lock(mutex_);
    join_finished(lock);
    if (stopping_) return;
    // Displaced connections' threads end within moments: their places are waited for, briefly.
    if (!changed_.wait_for(lock, kRoomWait, [this] { return stopping_ || make_room(); }) ||
        stopping_) {
      log("connection from " + peer.text + " closed: " + std::to_string(served_.size()) +
          " connections already being served");
      continue;
    }
    UniqueFd shut(
        ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));  // for shutdown() only: the handler may keep `fd`
    if (!shut.valid()) continue;
    const std::uint64_t order = next_order_++;
    // The entry first, then its thread (which waits for this lock before it ends): a failed
    // start never leaves a joinable thread behind.
    auto& served = served_[order];
    served.address = peer.address;
    served.order = order;
    served.shut = std::move(shut);
    try {
      served.thread =
          std::thread([this, fd = std::move(fd), peer = std::move(peer), order]() mutable {
            serve(std::move(fd), std::move(peer), order);
          });
    } catch (const std::system_error&) {
      served_.erase(order);  // no thread: the connection closes with `fd`
    }
  }
}

void AuthenticatedAcceptor::log(const std::string& line) {
  if (!refusal_log_) return;
  std::lock_guard lock(log_mutex_);
  refusal_log_(line);
}

void AuthenticatedAcceptor::serve(UniqueFd fd, Peer peer, std::uint64_t order) {
  const auto deadline = Clock::now() + limits_.proof_time;
  std::string refusal;
  std::optional<agent::AgentProof> nonces;
  try {
    nonces = agent::launcher_verify(fd.get(), secret_, deadline);
  } catch (const Error& e) {
    refusal = e.what();
  }
  bool proven = false;
  {
    // Decided under the lock, before the launcher's proof goes out: a connection displaced
    // until now is closed without it (its agent connects again), and one marked proven here
    // is never displaced.
    std::lock_guard lock(mutex_);
    Served& self = served_.at(order);
    if (self.displaced) {
      refusal = "displaced by newer connections before it proved the secret (" +
                std::to_string(limits_.max_unproven) + " wait for their proof at most)";
    }
    proven = refusal.empty() && !stopping_;
    self.proven = proven;
    if (!proven && stopping_) refusal.clear();  // the port is going away: nothing to say
  }
  if (proven) {
    try {
      agent::launcher_prove(fd.get(), secret_, *nonces, deadline);
      handler_(std::move(fd), peer);
    } catch (const Error& e) {
      log("connection from " + peer.text + " closed: " + e.what());
    }
  } else if (!refusal.empty()) {
    log("connection from " + peer.text + " closed: " + refusal);
  }
  fd.reset();  // a stranger's, or one the handler left: closed before the acceptor may go
  std::lock_guard lock(mutex_);
  const auto self = served_.find(order);
  finished_.push_back(std::move(self->second.thread));
  served_.erase(self);
  changed_.notify_all();
}

}  // namespace hvdrun::launcher::remote
