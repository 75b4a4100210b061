// The ring's data mover (see transfer.h): one thread, non-blocking send to the next rank and
// receive (and reduce) from the previous one, poll() only when neither can move.
#include "worker-runtime/tcp/transfer.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "hvdrun/error.h"
#include "worker-runtime/reduce.h"
#include "worker-runtime/tcp/socket.h"

namespace hvdrun::tcp {
namespace {

// How long wait() spins on zero-timeout polls before it sleeps in poll().
constexpr std::chrono::microseconds kSpinBeforeSleep{50};

// Of `n` bytes moved with the rest of a header first: adds the header's share to `done` (of
// `size`) and returns the bytes past it.
std::size_t past_header(std::size_t n, std::size_t& done, std::size_t size) {
  const std::size_t header = std::min(n, size - done);
  done += header;
  return n - header;
}

// Moves one Plan. Lifetime: one run_plan() call.
class Mover {
 public:
  Mover(const Links& links, const Plan& plan, std::vector<std::byte>& staging,
        std::string_view what)
      : links_(links),
        plan_(plan),
        staging_(staging),
        what_(what),
        element_(element_size(plan.dtype)) {}

  void run() {
    if (links_.abort != nullptr) links_.abort->check(std::string(what_));
    auto last_progress = Clock::now();
    for (;;) {
      bool progressed = pump_recv();
      progressed = pump_send() || progressed;
      if (send_index_ == plan_.send.size() && recv_index_ == plan_.recv.size() &&
          header_sent_ == plan_.header_size && header_received_ == plan_.header_size) {
        return;
      }
      if (progressed) {
        last_progress = Clock::now();
      } else {
        wait(last_progress + links_.timeout);
      }
    }
  }

 private:
  bool pump_send();
  bool pump_recv();
  // The header, with the first ready data bytes in the same segment; false: nothing went.
  bool send_header();
  bool recv_header();
  bool recv_stored(const RecvPiece& piece);
  bool recv_reduced(const RecvPiece& piece);
  void reduce_staged(const RecvPiece& piece);
  void wait(Clock::time_point deadline);
  void check_next_link();
  [[noreturn]] void lost(bool next, int error) const;
  // Throws LinkError<E> for the next (or previous) link.
  template <class E>
  [[noreturn]] void fail(bool next, LinkFault::Kind kind, std::string how,
                         std::string observed) const;
  std::string peer(bool next) const;  // "rank 1 (host:port)"

  std::string suffix() const { return " (generation " + std::to_string(links_.generation) + ")"; }

  const Links& links_;
  const Plan& plan_;
  std::vector<std::byte>& staging_;
  std::string_view what_;
  std::size_t element_;
  std::size_t send_index_ = 0, send_offset_ = 0, sent_ = 0;
  std::size_t recv_index_ = 0, recv_offset_ = 0, received_ = 0;
  std::size_t header_sent_ = 0, header_received_ = 0;
  std::size_t staged_ = 0;  // bytes in staging_ not yet reduced
  bool want_out_ = false;   // the last send hit a full socket buffer
};

bool Mover::send_header() {
  iovec parts[2] = {};
  parts[0] = {const_cast<std::byte*>(plan_.header_out) + header_sent_,
              plan_.header_size - header_sent_};
  std::size_t count = 1;
  while (send_index_ < plan_.send.size() && plan_.send[send_index_].size == 0) ++send_index_;
  const std::size_t ready = plan_.send_ready + received_ - sent_;
  if (send_index_ < plan_.send.size() && ready > 0) {
    const SendPiece& piece = plan_.send[send_index_];
    parts[count++] = {const_cast<std::byte*>(piece.data) + send_offset_,
                      std::min(ready, piece.size - send_offset_)};
  }
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = count;
  const ssize_t r = ::sendmsg(links_.next_fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (r < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      want_out_ = true;
    } else if (errno != EINTR) {
      lost(true, errno);
    }
    return false;
  }
  const std::size_t n = past_header(static_cast<std::size_t>(r), header_sent_, plan_.header_size);
  send_offset_ += n;
  sent_ += n;
  return r > 0;
}

bool Mover::pump_send() {
  bool progressed = false;
  want_out_ = false;
  if (header_sent_ < plan_.header_size) {
    progressed = send_header();
    if (header_sent_ < plan_.header_size) return progressed;
  }
  while (send_index_ < plan_.send.size()) {
    const SendPiece& piece = plan_.send[send_index_];
    if (send_offset_ == piece.size) {
      ++send_index_;
      send_offset_ = 0;
      continue;
    }
    const std::size_t ready = plan_.send_ready + received_ - sent_;
    if (ready == 0) break;
    const std::size_t n = std::min(ready, piece.size - send_offset_);
    const ssize_t r =
        ::send(links_.next_fd, piece.data + send_offset_, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      send_offset_ += static_cast<std::size_t>(r);
      sent_ += static_cast<std::size_t>(r);
      progressed = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      want_out_ = true;
      break;
    } else if (errno != EINTR) {
      lost(true, errno);
    }
  }
  return progressed;
}

// With the first incoming piece in the same call when that piece is stored, not reduced.
bool Mover::recv_header() {
  iovec parts[2] = {};
  parts[0] = {plan_.header_in + header_received_, plan_.header_size - header_received_};
  std::size_t count = 1;
  while (recv_index_ < plan_.recv.size() && plan_.recv[recv_index_].size == 0) ++recv_index_;
  if (recv_index_ < plan_.recv.size() && plan_.recv[recv_index_].local == nullptr) {
    const RecvPiece& piece = plan_.recv[recv_index_];
    parts[count++] = {piece.data + recv_offset_, piece.size - recv_offset_};
  }
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = count;
  for (;;) {
    const ssize_t r = ::recvmsg(links_.prev_fd, &message, MSG_DONTWAIT);
    if (r > 0) {
      const std::size_t n =
          past_header(static_cast<std::size_t>(r), header_received_, plan_.header_size);
      recv_offset_ += n;
      received_ += n;
      if (header_received_ == plan_.header_size && plan_.check_header) plan_.check_header();
      return true;
    }
    if (r == 0) lost(false, 0);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    if (errno != EINTR) lost(false, errno);
  }
}

bool Mover::pump_recv() {
  bool progressed = false;
  while (header_received_ < plan_.header_size) {
    if (!recv_header()) return progressed;
    progressed = true;
  }
  while (recv_index_ < plan_.recv.size()) {
    const RecvPiece& piece = plan_.recv[recv_index_];
    if (recv_offset_ == piece.size) {
      ++recv_index_;
      recv_offset_ = 0;
      continue;
    }
    const bool moved = piece.local ? recv_reduced(piece) : recv_stored(piece);
    if (!moved) break;
    progressed = true;
  }
  return progressed;
}

// Receives straight into place; false when the socket has nothing.
bool Mover::recv_stored(const RecvPiece& piece) {
  for (;;) {
    const ssize_t r =
        ::recv(links_.prev_fd, piece.data + recv_offset_, piece.size - recv_offset_, MSG_DONTWAIT);
    if (r > 0) {
      recv_offset_ += static_cast<std::size_t>(r);
      received_ += static_cast<std::size_t>(r);
      return true;
    }
    if (r == 0) lost(false, 0);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    if (errno != EINTR) lost(false, errno);
  }
}

// Receives into staging and reduces a chunk when it is full, at the piece's end, or when
// the socket runs dry (so the next send can go out without waiting for a full chunk).
bool Mover::recv_reduced(const RecvPiece& piece) {
  const std::size_t chunk = std::min(staging_.size(), piece.size - recv_offset_);
  for (;;) {
    const ssize_t r =
        ::recv(links_.prev_fd, staging_.data() + staged_, chunk - staged_, MSG_DONTWAIT);
    if (r > 0) {
      staged_ += static_cast<std::size_t>(r);
      if (staged_ == chunk) reduce_staged(piece);
      return true;
    }
    if (r == 0) lost(false, 0);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (staged_ < element_) return false;
      reduce_staged(piece);
      return true;
    }
    if (errno != EINTR) lost(false, errno);
  }
}

void Mover::reduce_staged(const RecvPiece& piece) {
  const std::size_t whole = staged_ / element_ * element_;
  combine(piece.data + recv_offset_, piece.local + recv_offset_, staging_.data(), whole / element_,
          plan_.dtype, plan_.op);
  recv_offset_ += whole;
  received_ += whole;
  staged_ -= whole;
  if (staged_ > 0) std::memmove(staging_.data(), staging_.data() + whole, staged_);
}

void Mover::wait(Clock::time_point deadline) {
  const bool sending = send_index_ < plan_.send.size() || header_sent_ < plan_.header_size;
  const bool receiving = recv_index_ < plan_.recv.size() || header_received_ < plan_.header_size;
  pollfd fds[3] = {};
  nfds_t count = 0;
  if (sending) {
    fds[count++] = {links_.next_fd,
                    static_cast<short>(POLLIN | POLLRDHUP | (want_out_ ? POLLOUT : 0)), 0};
  }
  if (receiving) fds[count++] = {links_.prev_fd, POLLIN, 0};
  if (links_.abort != nullptr) fds[count++] = {links_.abort->fd(), POLLIN, 0};
  // Spin briefly on zero-timeout polls before sleeping: for small messages a wake-up from a
  // sleeping poll() costs more than the exchange itself.
  int n = 0;
  const auto spin_until = Clock::now() + kSpinBeforeSleep;
  do {
    n = ::poll(fds, count, 0);
  } while (n == 0 && Clock::now() < spin_until);
  if (n == 0) n = ::poll(fds, count, net::poll_timeout_ms(deadline));
  if (n < 0 && errno != EINTR) lost(!receiving, errno);
  if (links_.abort != nullptr) links_.abort->check(std::string(what_));
  if (n == 0 && Clock::now() >= deadline) {
    const std::string secs = format_seconds(links_.timeout);
    if (receiving) {
      fail<TimeoutError>(false, LinkFault::Kind::kStalled, "sent no data for " + secs,
                         "no data from " + peer(false) + " for " + secs);
    }
    fail<TimeoutError>(true, LinkFault::Kind::kStalled, "took no data for " + secs,
                       peer(true) + " took no data for " + secs);
  }
  if (sending && (fds[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) check_next_link();
}

// The send link carries nothing back: readable means closed, reset, or a protocol breach.
void Mover::check_next_link() {
  std::byte byte{};
  const ssize_t r = ::recv(links_.next_fd, &byte, 1, MSG_DONTWAIT);
  if (r == 0) lost(true, 0);
  if (r > 0) {
    fail<ProtocolError>(true, LinkFault::Kind::kBreach, "sent data on a send-only link",
                        "unexpected data from " + peer(true) + " on the send link");
  }
  if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) lost(true, errno);
}

void Mover::lost(bool next, int error) const {
  const std::string why = error == 0 ? "closed by peer" : net::errno_text(error);
  fail<NetworkError>(next, LinkFault::Kind::kClosed, "connection lost: " + why,
                     "connection to " + peer(next) + " lost: " + why);
}

template <class E>
void Mover::fail(bool next, LinkFault::Kind kind, std::string how, std::string observed) const {
  const std::string message = std::string(what_) + ": " + observed + suffix();
  throw LinkError<E>(message, LinkFault(next ? links_.next_rank : links_.prev_rank, kind,
                                        std::move(how), std::move(observed)));
}

std::string Mover::peer(bool next) const {
  return "rank " + std::to_string(next ? links_.next_rank : links_.prev_rank) + " (" +
         (next ? links_.next_addr : links_.prev_addr) + ")";
}

}  // namespace

void run_plan(const Links& links, const Plan& plan, std::vector<std::byte>& staging,
              std::string_view what) {
  Mover(links, plan, staging, what).run();
}

}  // namespace hvdrun::tcp
