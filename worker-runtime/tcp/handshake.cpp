// Ring link setup with the authenticated hello exchange (see handshake.h).
#include "worker-runtime/tcp/handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <span>

#include "common/log_rate.h"
#include "hvdrun/error.h"
#include "rendezvous/auth.h"
#include "worker-runtime/logging.h"

namespace hvdrun::tcp {
namespace {

constexpr std::uint32_t kDataMagic = 0x44445648;  // bytes 'H','V','D','D'
constexpr std::size_t kPayloadSize = 16;
constexpr std::size_t kHelloSize = kPayloadSize + rdzv::kMacSize;
// Unauthenticated connections held at once. When one more arrives, the oldest is closed: it has
// had the longest to send its hello, and the peer sends its hello as soon as it is connected.
// Each connection is read as soon as it is accepted, so a peer whose hello is already there is
// taken before it is ever held, and one that closed at once is never held.
constexpr std::size_t kMaxPending = 1024;
constexpr auto kHelloDeadline = std::chrono::seconds(1);
// Out of file descriptors with nothing held to close: how long before accepting again.
constexpr auto kStarvedPause = std::chrono::milliseconds(10);
constexpr std::string_view kMacContext = "data";

using Hello = std::array<std::uint8_t, kHelloSize>;

void put_u32(std::uint8_t* out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint32_t get_u32(const std::uint8_t* in) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<std::uint32_t>(in[i]) << (8 * i);
  return value;
}

Hello make_hello(const RingIdentity& me, int to) {
  Hello hello{};
  put_u32(&hello[0], kDataMagic);
  put_u32(&hello[4], me.generation);
  put_u32(&hello[8], static_cast<std::uint32_t>(me.rank));
  put_u32(&hello[12], static_cast<std::uint32_t>(to));
  const auto mac = rdzv::compute_mac(me.secret, kMacContext, std::span(hello.data(), kPayloadSize));
  std::copy(mac.begin(), mac.end(), hello.begin() + kPayloadSize);
  return hello;
}

// Empty when `hello` is from rank `from` to this rank in this generation with a valid MAC;
// otherwise the reason, naming the expected and received values.
std::string check_hello(const Hello& hello, const RingIdentity& me, int from) {
  const std::uint32_t magic = get_u32(&hello[0]);
  const std::uint32_t generation = get_u32(&hello[4]);
  const std::uint32_t sender = get_u32(&hello[8]);
  const std::uint32_t receiver = get_u32(&hello[12]);
  if (magic != kDataMagic) return "bad magic 0x" + fmt::format("{:08x}", magic);
  if (generation != me.generation) {
    return "generation " + std::to_string(generation) + ", expected " +
           std::to_string(me.generation);
  }
  if (sender != static_cast<std::uint32_t>(from) ||
      receiver != static_cast<std::uint32_t>(me.rank)) {
    return "hello from rank " + std::to_string(sender) + " to rank " + std::to_string(receiver) +
           ", expected rank " + std::to_string(from) + " to rank " + std::to_string(me.rank);
  }
  const auto mac = rdzv::compute_mac(me.secret, kMacContext, std::span(hello.data(), kPayloadSize));
  if (!rdzv::mac_equal(mac, std::span(hello.data() + kPayloadSize, rdzv::kMacSize))) {
    return "authentication failed (wrong job secret)";
  }
  return {};
}

std::string gen_text(const RingIdentity& me) {
  return " (generation " + std::to_string(me.generation) + ")";
}

// An accepted connection whose hello is not complete yet.
struct Candidate {
  UniqueFd fd;
  std::string peer;
  Clock::time_point deadline;  // for its hello
  Hello hello{};
  std::size_t got = 0;
};

// Connections that were not the peer, reported without flooding the log: the first at once,
// later ones as one line per interval with their count, and what was held back at the end.
class IgnoredConnections {
 public:
  void add(const std::string& peer, const std::string& why) {
    latest_ = peer + ": " + why;
    std::uint64_t held_back = 0;
    if (rate_.admit(held_back)) report(held_back, latest_);
  }
  ~IgnoredConnections() {
    if (rate_.held_back() > 0) report(rate_.held_back(), latest_);
  }
  IgnoredConnections() = default;
  IgnoredConnections(const IgnoredConnections&) = delete;
  IgnoredConnections& operator=(const IgnoredConnections&) = delete;

 private:
  static void report(std::uint64_t held_back, const std::string& latest) {
    if (held_back == 0) {
      runtime_log().warn("ring setup: ignored connection from {}", latest);
    } else {
      runtime_log().warn("ring setup: ignored {} more connections (latest from {})", held_back,
                         latest);
    }
  }
  LogRate rate_;
  std::string latest_;
};

// Reads what `c` has sent; returns true when its hello is complete. Drops it (fd reset) on
// EOF or error.
bool read_candidate(Candidate& c, IgnoredConnections& ignored) {
  const ssize_t r = ::recv(c.fd.get(), c.hello.data() + c.got, kHelloSize - c.got, MSG_DONTWAIT);
  if (r > 0) {
    c.got += static_cast<std::size_t>(r);
    return c.got == kHelloSize;
  }
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  ignored.add(c.peer, "closed before its hello");
  c.fd.reset();
  return false;
}

// The connection accept_from waits for: rank `from`'s hello, in this ring's generation.
struct Expected {
  const RingIdentity& me;
  int from;
};

// Reads what `c` has sent and judges it: true when it is the peer's valid hello. A wrong hello
// or a closed connection is dropped (fd reset); otherwise `c` waits for more.
bool is_the_peer(Candidate& c, const Expected& expected, IgnoredConnections& ignored) {
  if (!read_candidate(c, ignored)) return false;
  const std::string why = check_hello(c.hello, expected.me, expected.from);
  if (why.empty()) return true;
  ignored.add(c.peer, why);
  c.fd.reset();
  return false;
}

// Closes the oldest held candidate for room, unless it turns out to be the peer: then it is
// returned.
UniqueFd make_room(std::deque<Candidate>& pending, const Expected& expected,
                   IgnoredConnections& ignored, const std::string& why) {
  Candidate& oldest = pending.front();
  if (is_the_peer(oldest, expected, ignored)) return std::move(oldest.fd);
  if (oldest.fd) ignored.add(oldest.peer, "closed for room: " + why);
  pending.pop_front();
  return {};
}

// What a round of accepting gave: the peer's connection, or whether this process ran out of
// file descriptors (or memory) with nothing held to close for room.
struct Accepted {
  UniqueFd peer;
  bool starved = false;
};

// Accepts what is queued on the listener (at most kMaxPending at a time, so that the held
// candidates are looked at between rounds). Returns the peer's connection if one of them, or
// the oldest held candidate about to be closed for room, is the peer.
Accepted accept_pending(Listener& listener, std::deque<Candidate>& pending,
                        const Expected& expected, IgnoredConnections& ignored) {
  std::string peer;
  for (std::size_t round = 0; round < kMaxPending; ++round) {
    int error = 0;
    UniqueFd fd = listener.accept_one(peer, error);
    if (!fd && error != 0) {  // out of descriptors: the oldest held one makes room
      if (pending.empty()) return {{}, true};
      const std::string why = std::string("cannot accept more: ") + std::strerror(error);
      if (UniqueFd found = make_room(pending, expected, ignored, why)) return {std::move(found)};
      continue;
    }
    if (!fd) break;
    Candidate c{std::move(fd), peer, Clock::now() + kHelloDeadline};
    if (is_the_peer(c, expected, ignored)) return {std::move(c.fd)};
    if (!c.fd) continue;
    if (pending.size() >= kMaxPending) {
      const std::string why = std::to_string(kMaxPending) + " unauthenticated connections pending";
      if (UniqueFd found = make_room(pending, expected, ignored, why)) return {std::move(found)};
    }
    pending.push_back(std::move(c));
  }
  return {};
}

// Accepts connections until one carries a valid hello from rank `from`, or the deadline.
UniqueFd accept_from(const RingIdentity& me, const rdzv::PeerAddr& address, int from,
                     Listener& listener, Clock::time_point deadline) {
  const Expected expected{me, from};
  std::deque<Candidate> pending;
  IgnoredConnections ignored;
  bool starved = false;  // the last round could not accept for want of descriptors
  for (;;) {
    if (Clock::now() >= deadline) {
      throw TimeoutError("ring setup: " + peer_text(from, address) + " did not connect to rank " +
                         std::to_string(me.rank) + " on port " + std::to_string(listener.port()) +
                         " in time" + gen_text(me));
    }
    // Starved, the listener stays readable: look again after a pause instead of at once.
    std::vector<pollfd> fds{{listener.fd(), static_cast<short>(starved ? 0 : POLLIN), 0}};
    auto wake = starved ? std::min(deadline, Clock::now() + kStarvedPause) : deadline;
    for (const auto& c : pending) {
      fds.push_back({c.fd.get(), POLLIN, 0});
      wake = std::min(wake, c.deadline);
    }
    if (me.abort != nullptr) fds.push_back({me.abort->fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), net::poll_timeout_ms(wake));
    if (me.abort != nullptr) me.abort->check("ring setup");
    const auto now = Clock::now();
    for (std::size_t i = 0; i < pending.size(); ++i) {
      Candidate& c = pending[i];
      if (fds[i + 1].revents != 0 && is_the_peer(c, expected, ignored)) return std::move(c.fd);
      if (c.fd && now >= c.deadline) {
        ignored.add(c.peer, "no hello within 1 s");
        c.fd.reset();
      }
    }
    std::erase_if(pending, [](const Candidate& c) { return !c.fd; });
    if (starved || fds[0].revents != 0) {
      Accepted accepted = accept_pending(listener, pending, expected, ignored);
      if (accepted.peer) return std::move(accepted.peer);
      starved = accepted.starved;
    }
  }
}

int abort_fd(const RingIdentity& me) {
  return me.abort != nullptr ? me.abort->fd() : -1;
}

// For a wait that ended early: AbortedError naming `what` and the abort's reason.
void check_abort(const RingIdentity& me, const std::string& what) {
  if (me.abort != nullptr) me.abort->check("ring setup: " + what + gen_text(me));
}

net::IoResult send_hello(int fd, const RingIdentity& me, int to, Clock::time_point deadline) {
  const Hello hello = make_hello(me, to);
  return net::send_all(fd, hello.data(), hello.size(), deadline, abort_fd(me));
}

// The link to the next rank: connected, this rank's hello sent, and (once the previous rank is
// linked) the next rank's answer read. The next rank may close a connection before it read the
// hello: it holds at most kMaxPending unauthenticated ones and closes the oldest for room, and
// it waits kHelloDeadline for a hello. So a link that breaks before the answer is connected
// again, at most kMaxReconnects times, each within kReconnectWindow (long enough for two
// retransmissions of a SYN that a full backlog dropped, at 1 s and 3 s; a listener that is
// gone refuses throughout).
class NextLink {
 public:
  static constexpr int kMaxReconnects = 3;
  static constexpr auto kReconnectWindow = std::chrono::seconds(4);

  NextLink(const RingIdentity& me, const rdzv::PeerAddr& address, int rank,
           Clock::time_point deadline)
      : me_(me),
        address_(address),
        rank_(rank),
        text_(peer_text(rank, address)),
        deadline_(deadline) {}

  // Connects, retrying until the deadline (the next rank may not listen yet), and sends the
  // hello.
  void open() {
    try {
      fd_ = connect_with_retry(address_.addr, address_.port, deadline_, abort_fd(me_));
    } catch (const AbortedError&) {
      check_abort(me_, "connecting to " + text_);
      throw;
    } catch (const TimeoutError& e) {
      throw TimeoutError("ring setup: " + text_ + ": " + e.what() + gen_text(me_));
    } catch (const NetworkError& e) {
      throw NetworkError("ring setup: " + text_ + ": " + e.what() + gen_text(me_));
    }
    broken_ = send();
  }

  // The connection, once the next rank answered the hello.
  UniqueFd answered() {
    for (int reconnects = 0;; ++reconnects) {
      if (broken_.empty()) broken_ = await_answer();
      if (broken_.empty()) return std::move(fd_);
      if (reconnects == kMaxReconnects) throw dropped("");
      runtime_log().warn(
          "ring setup: {} closed the connection before answering ({}); "
          "connecting again{}",
          text_, broken_, gen_text(me_));
      try {
        fd_ =
            connect_with_retry(address_.addr, address_.port,
                               std::min(deadline_, Clock::now() + kReconnectWindow), abort_fd(me_));
      } catch (const AbortedError&) {
        check_abort(me_, "connecting again to " + text_);
        throw;
      } catch (const std::exception& e) {
        const std::string why = std::string("; connecting again failed: ") + e.what();
        if (Clock::now() >= deadline_) {  // the setup's own time ran out
          throw TimeoutError(dropped_text(why));
        }
        throw dropped(why);
      }
      broken_ = send();
    }
  }

 private:
  // Sends the hello: empty when sent, else how the connection broke.
  std::string send() {
    return outcome(send_hello(fd_.get(), me_, rank_, deadline_), "sending hello to " + text_);
  }

  // Reads and checks the answer: empty when it came, else how the connection broke.
  std::string await_answer() {
    Hello answer{};
    const std::string broken =
        outcome(net::recv_all(fd_.get(), answer.data(), answer.size(), deadline_, abort_fd(me_)),
                "waiting for the answer of " + text_);
    if (!broken.empty()) return broken;
    if (const std::string why = check_hello(answer, me_, rank_); !why.empty()) {
      throw ProtocolError("ring setup: " + text_ + " answered wrongly: " + why + gen_text(me_));
    }
    return {};
  }

  // What a send or receive on the link (`doing`) gave: empty when done, the reason when the
  // next rank closed or reset the connection. A timeout or an abort throws.
  std::string outcome(const net::IoResult& result, const std::string& doing) const {
    using Status = net::IoResult::Status;
    switch (result.status) {
      case Status::kOk:
        return {};
      case Status::kClosed:
      case Status::kError:
        return result.text();
      case Status::kTimeout:
        throw TimeoutError("ring setup: " + doing + " timed out" + gen_text(me_));
      case Status::kInterrupted:
        check_abort(me_, doing);
        break;
    }
    throw NetworkError("ring setup: " + doing + ": " + result.text() + gen_text(me_));
  }

  std::string dropped_text(const std::string& more) const {
    return "ring setup: " + text_ + " dropped the connection: " + broken_ + more + gen_text(me_);
  }
  NetworkError dropped(const std::string& more) const { return NetworkError(dropped_text(more)); }

  const RingIdentity& me_;
  const rdzv::PeerAddr& address_;
  const int rank_;
  const std::string text_;
  const Clock::time_point deadline_;
  UniqueFd fd_;
  std::string broken_;  // how the connection broke before the answer; empty while it holds
};

}  // namespace

std::string peer_text(int rank, const rdzv::PeerAddr& address) {
  return "rank " + std::to_string(rank) + " (" + address.addr + ":" + std::to_string(address.port) +
         ")";
}

RingLinks connect_ring(const RingIdentity& me, const RingAddresses& addresses, Listener& listener,
                       Clock::time_point deadline) {
  const int next = (me.rank + 1) % me.size;
  const int prev = (me.rank - 1 + me.size) % me.size;
  NextLink link(me, addresses.next, next, deadline);
  link.open();
  RingLinks links;
  links.prev = accept_from(me, addresses.prev, prev, listener, deadline);
  if (const net::IoResult sent = send_hello(links.prev.get(), me, prev, deadline); !sent.ok()) {
    if (sent.status == net::IoResult::Status::kInterrupted) {
      check_abort(me, "sending hello to " + peer_text(prev, addresses.prev));
    }
    throw NetworkError("ring setup: sending hello to " + peer_text(prev, addresses.prev) +
                       " failed: " + sent.text() + gen_text(me));
  }
  links.next = link.answered();
  return links;
}

}  // namespace hvdrun::tcp
