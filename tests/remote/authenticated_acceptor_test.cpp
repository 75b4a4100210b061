// The authenticated port's bounds against strangers: a silent one is closed at the proof time;
// when the slots for unproven connections are full, a newcomer displaces the oldest of the
// address that holds the most, never another address's nor a proven peer; a real peer gets in.
#include "launcher/remote/authenticated_acceptor.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "launcher/agent/agent_auth.h"
#include "tests/support/wait_until.h"

namespace hvdrun::launcher::remote {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kSecret(64, 's');

// A listening socket on 127.0.0.1, any port.
UniqueFd listening(std::uint16_t& port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 1024) != 0) {
    throw std::runtime_error("listen");
  }
  socklen_t size = sizeof addr;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &size);
  port = ntohs(addr.sin_port);
  return fd;
}

// A connection to 127.0.0.1:`port` from `source` (any address of the loopback's 127/8).
UniqueFd connect_from(const char* source, std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    throw std::runtime_error("connect from " + std::string(source));
  }
  return fd;
}

// Reads what comes until EOF or `limit`: true at EOF (the acceptor closed the connection).
bool closed_within(const UniqueFd& fd, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  char buffer[256];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    if (::read(fd.get(), buffer, sizeof buffer) <= 0) return true;
  }
}

struct Acceptor {
  explicit Acceptor(AuthenticatedAcceptor::Limits limits) {
    acceptor.emplace(
        listening(port), kSecret, limits,
        [this](UniqueFd, const AuthenticatedAcceptor::Peer&) { ++proven; },
        [this](const std::string& line) {
          if (line.find("displaced") != std::string::npos) ++displaced;
        });
  }
  std::uint16_t port = 0;
  std::atomic<int> proven{0}, displaced{0};
  std::optional<AuthenticatedAcceptor> acceptor;
};

TEST(AuthenticatedAcceptor, ASilentStrangerIsClosedAtTheProofTime) {
  Acceptor a({4, 300ms});
  const auto stranger = connect_from("127.0.0.1", a.port);
  const auto start = Clock::now();
  EXPECT_TRUE(closed_within(stranger, 10s));
  EXPECT_GE(Clock::now() - start, 250ms);
  EXPECT_EQ(a.proven.load(), 0);
}

// One address's strangers, however many, displace only each other: the other address's
// connection keeps its slot and then proves the secret.
TEST(AuthenticatedAcceptor, OneAddressCannotDisplaceAnothers) {
  Acceptor a({4, 30s});
  auto other = connect_from("127.0.0.2", a.port);
  std::vector<UniqueFd> strangers;
  for (int i = 0; i < 20; ++i) strangers.push_back(connect_from("127.0.0.1", a.port));
  // 3 slots for 127.0.0.1: the first 17 of its 20 are displaced, oldest first.
  for (int i = 0; i < 17; ++i) EXPECT_TRUE(closed_within(strangers[i], 10s)) << i;
  for (int i = 17; i < 20; ++i) EXPECT_FALSE(closed_within(strangers[i], 100ms)) << i;
  EXPECT_EQ(a.acceptor->unproven(), 4u);
  agent::agent_handshake(other.get(), kSecret, Clock::now() + 10s);
  hvdrun::test::wait_until([&] { return a.proven.load() != 0; }, std::chrono::seconds(5));
  EXPECT_EQ(a.proven.load(), 1);
  EXPECT_GE(a.displaced.load(), 1);  // logged (the owner limits its lines)
}

// With every slot taken, a newcomer displaces the oldest unproven connection: a silent
// stranger loses its place to whoever comes after it.
TEST(AuthenticatedAcceptor, ANewcomerDisplacesTheOldestUnproven) {
  Acceptor a({2, 30s});
  auto first = connect_from("127.0.0.1", a.port);
  auto second = connect_from("127.0.0.1", a.port);
  EXPECT_FALSE(closed_within(first, 200ms));
  auto third = connect_from("127.0.0.1", a.port);
  EXPECT_TRUE(closed_within(first, 10s));
  EXPECT_FALSE(closed_within(second, 200ms));
  agent::agent_handshake(third.get(), kSecret, Clock::now() + 10s);  // the newcomer proves
  hvdrun::test::wait_until([&] { return a.proven.load() != 0; }, std::chrono::seconds(5));
  EXPECT_EQ(a.proven.load(), 1);
}

}  // namespace
}  // namespace hvdrun::launcher::remote
