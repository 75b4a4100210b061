// Ring error paths with real faults, as each rank's own links see them (no FailureBoard; see
// ring_blame_test.cpp for naming the first failure): a rank that never calls (timeout), the
// broken state afterwards, and ring setup in the presence of stray, garbage and wrongly
// authenticated connections.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "rendezvous/auth.h"
#include "tests/support/elapsed.h"
#include "tests/worker-runtime/ring_harness.h"
#include "worker-runtime/logging.h"

namespace hvdrun {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

template <class E>
std::string expect_throws(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error kind: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

void expect_message(const std::string& message, const std::string& head, const std::string& tail) {
  EXPECT_EQ(message.rfind(head, 0), 0u) << message;
  ASSERT_GE(message.size(), tail.size()) << message;
  EXPECT_EQ(message.substr(message.size() - tail.size()), tail) << message;
}

// Only rank 0 enters the collective; the others stay alive and silent. Rank 0 receives from
// rank n-1, so its error names that rank. Small and large (pipelined) paths both.
TEST(RingFailure, RankThatNeverCallsTimesOutNamingIt) {
  for (const int n : {2, 3}) {
    for (const std::size_t count : {std::size_t{1000}, std::size_t{1} << 20}) {
      auto rings = test::make_rings(n, milliseconds(200));
      test::run_ranks(n, [&](int r) {
        if (r != 0) {  // keeps its ring open until rank 0 gave up
          std::this_thread::sleep_for(milliseconds(700));
          return;
        }
        std::vector<std::int64_t> data(count, 1);
        const auto start = Clock::now();
        const std::string message = expect_throws<TimeoutError>([&] {
          rings[0]->allreduce(data.data(), data.data(), count, DataType::kInt64, ReduceOp::kMax);
        });
        expect_message(message,
                       "allreduce: no data from rank " + std::to_string(n - 1) + " (127.0.0.1:",
                       ") for 0.2 s (generation 0)");
        const double elapsed = test::seconds_since(start);
        EXPECT_GT(elapsed, 0.15) << "n " << n << " count " << count;
        EXPECT_LT(elapsed, 3.0) << "n " << n << " count " << count;
        // Broken from now on, and the kind is kept.
        EXPECT_THROW(rings[0]->barrier(), TimeoutError);
      });
    }
  }
}

// A root whose next rank never reads: its sends stall and the error names the next rank.
// Rank 1 never enters the broadcast: the root waits for its descriptor and names it.
TEST(RingFailure, RankThatNeverEntersABroadcastTimesOutNamingIt) {
  auto rings = test::make_rings(2, milliseconds(200));
  test::run_ranks(2, [&](int r) {
    if (r == 1) {
      std::this_thread::sleep_for(milliseconds(700));
      return;
    }
    std::vector<std::uint8_t> data(64 << 20, 7);  // more than both socket buffers hold
    const std::string message = expect_throws<TimeoutError>(
        [&] { rings[0]->broadcast(data.data(), data.size(), DataType::kUInt8, 0); });
    expect_message(message,
                   "broadcast: no data from rank 1 (127.0.0.1:", ") for 0.2 s (generation 0)");
  });
}

// The 48-byte data-link hello documented in tcp/handshake.h.
std::array<std::uint8_t, 48> hello(std::string_view secret, std::uint32_t generation,
                                   std::uint32_t from, std::uint32_t to) {
  std::array<std::uint8_t, 48> out{};
  const std::uint32_t fields[4] = {0x44445648, generation, from, to};
  for (int f = 0; f < 4; ++f) {
    for (int b = 0; b < 4; ++b) out[4 * f + b] = static_cast<std::uint8_t>(fields[f] >> (8 * b));
  }
  const auto mac = rdzv::compute_mac(secret, "data", std::span(out.data(), 16));
  std::copy(mac.begin(), mac.end(), out.begin() + 16);
  return out;
}

TEST(RingSetup, StrayAndUnauthenticatedConnectionsDoNotBreakTheRing) {
  constexpr int n = 3;
  test::Listeners l = test::bind_listeners(n);
  const auto deadline = Clock::now() + milliseconds(5000);
  const std::uint16_t port = l.peers[1].port;  // rank 1 accepts from rank 0
  std::vector<UniqueFd> strays;
  const auto connect_and_send = [&](std::span<const std::uint8_t> bytes) {
    strays.push_back(tcp::connect_with_retry("127.0.0.1", port, deadline));
    if (!bytes.empty()) {
      ASSERT_TRUE(net::send_all(strays.back().get(), bytes.data(), bytes.size(), deadline).ok());
    }
  };
  connect_and_send({});  // silent, stays open
  const std::vector<std::uint8_t> garbage(48, 0x5a);
  connect_and_send(garbage);  // bad magic
  const auto wrong_secret = hello("not-the-secret", 0, 0, 1);
  connect_and_send(wrong_secret);  // bad MAC
  const auto wrong_generation = hello(test::kSecret, 7, 0, 1);
  connect_and_send(wrong_generation);  // stale generation
  const auto wrong_rank = hello(test::kSecret, 0, 2, 1);
  connect_and_send(wrong_rank);                          // not the left neighbour
  connect_and_send(std::span(wrong_secret.data(), 20));  // truncated, then closed
  strays.back().reset();

  std::vector<std::unique_ptr<tcp::Ring>> rings(n);
  const auto errors = test::run_ranks(n, [&](int r) {
    rings[r] =
        std::make_unique<tcp::Ring>(r, n, test::addresses_of(l, r), std::move(l.listeners[r]),
                                    std::string(test::kSecret), 0, milliseconds(5000));
    std::int32_t value = r + 1;
    rings[r]->allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(value, 6);
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

// A TCP connection to `port` on loopback; a non-blocking one may still be connecting.
UniqueFd connect_loopback(std::uint16_t port, int flags) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
      errno != EINPROGRESS) {
    fd.reset();
  }
  return fd;
}

// Forms a ring of `n` ranks on the listeners (10 s to set up), each rank after before(rank)
// if given, and sums rank + 1 over it; the errors of the ranks.
std::vector<std::exception_ptr> form_ring_and_sum(test::Listeners& l, int n,
                                                  const std::function<void(int)>& before = {}) {
  std::vector<std::unique_ptr<tcp::Ring>> rings(n);
  return test::run_ranks(n, [&](int r) {
    if (before) before(r);
    rings[r] =
        std::make_unique<tcp::Ring>(r, n, test::addresses_of(l, r), std::move(l.listeners[r]),
                                    std::string(test::kSecret), 0, milliseconds(10000));
    std::int32_t value = r + 1;
    rings[r]->allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(value, n * (n + 1) / 2);
  });
}

// Another local user floods every rank's data port with connections that stay silent or close
// at once, while the ring forms: the ring still forms and computes, and the log gets a few
// summary lines, not one per connection.
TEST(RingSetup, AFloodOfConnectionsFromAnotherUserDoesNotBreakTheRing) {
  constexpr int n = 3;
  test::Listeners l = test::bind_listeners(n);
  const pid_t flooder = ::fork();
  ASSERT_GE(flooder, 0);
  if (flooder == 0) {  // another user where the test runs as root; connects for 3 s
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(2);
    std::vector<UniqueFd> held;  // silent connections, kept open
    const auto until = Clock::now() + milliseconds(2000);
    for (int i = 0; Clock::now() < until; ++i) {
      for (const auto& peer : l.peers) {
        UniqueFd fd = connect_loopback(peer.port, SOCK_NONBLOCK);
        if (i % 2 == 0 && held.size() < 900) held.push_back(std::move(fd));  // else closed
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ::_exit(0);
  }
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100000);
  runtime_log().sinks().push_back(sink);
  std::this_thread::sleep_for(milliseconds(300));  // the flood is under way
  const auto errors = form_ring_and_sum(l, n);
  runtime_log().sinks().pop_back();
  int status = 0;
  ::waitpid(flooder, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
  const auto lines = sink->last_formatted();
  EXPECT_LE(lines.size(), 3u * 4) << (lines.empty() ? "" : lines.back());
}

// More silent connections than a rank holds unauthenticated (1024) are queued on every data
// port before the ring forms, so each peer's own connection arrives when the rank's room is full:
// the oldest silent one makes room and the peer is taken. (Closing the newcomer instead closed
// the peer's only connection, and the ring timed out.)
TEST(RingSetup, ThePeerIsTakenWhenMoreSilentConnectionsThanTheRankHoldsCameFirst) {
  constexpr int n = 2;
  constexpr int kSilent = 1100;
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  ASSERT_GE(limit.rlim_cur, rlim_t{2 * n * kSilent + 256}) << "raise the open-file limit";
  test::Listeners l = test::bind_listeners(n);
  std::vector<UniqueFd> silent;
  for (const auto& peer : l.peers) {
    for (int i = 0; i < kSilent; ++i) {
      silent.push_back(connect_loopback(peer.port, 0));
      ASSERT_TRUE(silent.back()) << "connection " << i << ": " << std::strerror(errno);
    }
  }
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
  runtime_log().sinks().push_back(sink);
  const auto errors = form_ring_and_sum(l, n);
  runtime_log().sinks().pop_back();
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
  bool made_room = false;
  for (const auto& line : sink->last_formatted()) {
    made_room = made_room || line.find(
                                 "closed for room: 1024 unauthenticated connections "
                                 "pending") != std::string::npos;
  }
  EXPECT_TRUE(made_room) << "the rank never held 1024 connections: the test did not test";
}

// Takes the first connection queued on `listener` (within 5 s), waits until its hello is
// there, and closes it unread, as a rank closes a held connection for room: the kernel resets it.
void close_first_connection_unread(tcp::Listener& listener) {
  const auto until = Clock::now() + milliseconds(5000);
  UniqueFd fd;
  std::string peer;
  while (!fd && Clock::now() < until) {
    pollfd p{listener.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    int error = 0;
    fd = listener.accept_one(peer, error);
  }
  ASSERT_TRUE(fd) << "nothing connected";
  std::array<std::uint8_t, 48> hello{};
  while (Clock::now() < until &&
         ::recv(fd.get(), hello.data(), hello.size(), MSG_PEEK | MSG_DONTWAIT) <
             static_cast<ssize_t>(hello.size())) {
    pollfd p{fd.get(), POLLIN, 0};
    ::poll(&p, 1, 100);
  }
}

bool logged(const std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt>& sink,
            const std::string& text) {
  for (const auto& line : sink->last_formatted()) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

// Rank 1 closes rank 0's first connection before reading its hello (as when it made room among
// held connections): rank 0 connects again and the ring forms. (Before, rank 0 failed with
// "rank 1 dropped the connection".)
TEST(RingSetup, AConnectionTheNextRankClosedBeforeItsHelloIsMadeAgain) {
  constexpr int n = 2;
  test::Listeners l = test::bind_listeners(n);
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  runtime_log().sinks().push_back(sink);
  const auto errors = form_ring_and_sum(l, n, [&](int r) {
    if (r == 1) close_first_connection_unread(l.listeners[1]);
  });
  runtime_log().sinks().pop_back();
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
  EXPECT_TRUE(logged(sink, "ring setup: rank 1 (127.0.0.1:" + std::to_string(l.peers[1].port) +
                               ") closed the connection before answering"));
}

// The same, but rank 1 is gone (its listener closed): rank 0's new connection is refused (for
// 4 s), and it reports the dropped connection and the refusal before its 10 s deadline.
TEST(RingSetup, AConnectionClosedByARankThatIsGoneIsReportedBeforeTheDeadline) {
  constexpr int n = 3;
  test::Listeners l = test::bind_listeners(n);
  const auto start = Clock::now();
  const auto errors = test::run_ranks(n, [&](int r) {
    if (r == 1) {  // never forms its links
      close_first_connection_unread(l.listeners[1]);
      l.listeners[1].close();
      return;
    }
    // Rank 2 waits for rank 1 in vain: it gives up after 3 s; rank 0 links to it before.
    tcp::Ring ring(r, n, test::addresses_of(l, r), std::move(l.listeners[r]),
                   std::string(test::kSecret), 0, milliseconds(r == 0 ? 10000 : 3000));
  });
  ASSERT_NE(errors[0], nullptr);
  const std::string message = test::what(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), NetworkError);
  EXPECT_EQ(message.rfind("ring setup: rank 1 (127.0.0.1:" + std::to_string(l.peers[1].port) +
                              ") dropped the connection: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("; connecting again failed: cannot connect to 127.0.0.1:"),
            std::string::npos)
      << message;
  EXPECT_LT(test::seconds_since(start), 9.0) << message;
  EXPECT_THROW(std::rethrow_exception(errors[2]), TimeoutError);
}

TEST(RingSetup, WrongSecretTimesOutNamingTheRank) {
  constexpr int n = 2;
  test::Listeners l = test::bind_listeners(n);
  const auto errors = test::run_ranks(n, [&](int r) {
    const std::string secret = r == 1 ? "another-job" : std::string(test::kSecret);
    tcp::Ring ring(r, n, test::addresses_of(l, r), std::move(l.listeners[r]), secret, 0,
                   milliseconds(300));
  });
  ASSERT_NE(errors[0], nullptr);
  const std::string message = test::what(errors[0]);
  EXPECT_NE(message.find("ring setup: rank 1 (127.0.0.1:"), std::string::npos) << message;
  EXPECT_THROW(std::rethrow_exception(errors[0]), TimeoutError);
  EXPECT_NE(errors[1], nullptr);
}

}  // namespace
}  // namespace hvdrun
