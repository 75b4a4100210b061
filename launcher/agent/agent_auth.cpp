// The agent connection's mutual proof of the job secret (agent_auth.h).
#include "launcher/agent/agent_auth.h"

#include <openssl/rand.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "common/socket_io.h"
#include "common/unique_fd.h"
#include "hvdrun/error.h"
#include "rendezvous/auth.h"

namespace hvdrun::launcher::agent {
namespace {

using Nonce = std::array<std::uint8_t, rdzv::kNonceSize>;
using Mac = std::array<std::uint8_t, rdzv::kMacSize>;

int ms_left(HandshakeClock::time_point deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - HandshakeClock::now()).count();
  return static_cast<int>(std::max<long>(0, std::min<long>(left, 60'000)));
}

void read_exact(int fd, std::uint8_t* out, std::size_t size, HandshakeClock::time_point deadline,
                const char* what) {
  std::size_t got = 0;
  while (got < size) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, ms_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) throw TimeoutError(std::string("agent handshake: no ") + what + " in time");
    const long n = read_some(fd, reinterpret_cast<char*>(out) + got, size - got);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0 && got == 0 && std::string_view(what).ends_with("from the launcher")) {
      // Closed before the launcher said anything, or before its proof: it was busy (strangers
      // held its handshake slots and this connection was displaced, or took too long) or going
      // away; worth another try. A wrong secret is answered with kRefusal instead.
      throw NetworkError(
          std::string("agent handshake: the launcher closed the connection before ") + "its " +
          what);
    }
    if (n <= 0) {
      throw ProtocolError(std::string("agent handshake: the connection closed before the ") + what);
    }
    got += static_cast<std::size_t>(n);
  }
}

// On a socket: send() without SIGPIPE (a peer that closed is an error here, not a signal).
void write_exact(int fd, const std::string& bytes, HandshakeClock::time_point deadline) {
  const net::IoResult sent = net::send_all(fd, bytes.data(), bytes.size(), deadline);
  if (sent.status == net::IoResult::Status::kTimeout) {
    throw TimeoutError("agent handshake: could not write in time");
  }
  if (!sent.ok()) throw NetworkError("agent handshake: " + sent.text());
}

Nonce fresh_nonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    throw Error("agent handshake: the random number generator failed");
  }
  return nonce;
}

Mac proof(std::string_view secret, std::string_view context, const Nonce& launcher,
          const Nonce& agent) {
  std::array<std::uint8_t, 2 * rdzv::kNonceSize> both{};
  std::memcpy(both.data(), launcher.data(), launcher.size());
  std::memcpy(both.data() + launcher.size(), agent.data(), agent.size());
  return rdzv::compute_mac(secret, context, both);
}

constexpr std::string_view kAgentContext = "hvdrun node agent";
// The launcher's answer, in place of its proof, to a proof that does not match its secret: the
// agent then knows the secrets differ (a MAC equals it with probability 2^-256).
constexpr std::string_view kRefusal = "HVDX: this proof does not match.";
static_assert(kRefusal.size() == rdzv::kMacSize);
constexpr std::string_view kLauncherContext = "hvdrun launcher";

std::string bytes_of(std::string_view magic,
                     std::initializer_list<std::span<const std::uint8_t>> parts) {
  std::string out(magic);
  for (const auto part : parts) out.append(reinterpret_cast<const char*>(part.data()), part.size());
  return out;
}

}  // namespace

AgentProof launcher_verify(int fd, std::string_view secret, HandshakeClock::time_point deadline) {
  AgentProof nonces;
  nonces.launcher = fresh_nonce();
  write_exact(fd, bytes_of("HVDL", {nonces.launcher}), deadline);
  std::array<std::uint8_t, 4 + rdzv::kNonceSize + rdzv::kMacSize> reply{};
  read_exact(fd, reply.data(), reply.size(), deadline, "answer from the agent");
  if (std::memcmp(reply.data(), "HVDA", 4) != 0) {
    throw ProtocolError("agent handshake: the peer is not an hvdrun node agent");
  }
  std::memcpy(nonces.agent.data(), reply.data() + 4, nonces.agent.size());
  const Mac expected = proof(secret, kAgentContext, nonces.launcher, nonces.agent);
  if (!rdzv::mac_equal(expected, std::span(reply).subspan(4 + rdzv::kNonceSize))) {
    try {
      write_exact(fd, std::string(kRefusal), deadline);
    } catch (const Error&) {
    }
    throw ProtocolError(
        "agent handshake: its proof does not match this job's secret (a stranger, or a node "
        "given another secret)");
  }
  return nonces;
}

void launcher_prove(int fd, std::string_view secret, const AgentProof& nonces,
                    HandshakeClock::time_point deadline) {
  write_exact(fd, bytes_of("", {proof(secret, kLauncherContext, nonces.launcher, nonces.agent)}),
              deadline);
}

void launcher_handshake(int fd, std::string_view secret, HandshakeClock::time_point deadline) {
  launcher_prove(fd, secret, launcher_verify(fd, secret, deadline), deadline);
}

void agent_handshake(int fd, std::string_view secret, HandshakeClock::time_point deadline) {
  std::array<std::uint8_t, 4 + rdzv::kNonceSize> challenge{};
  read_exact(fd, challenge.data(), challenge.size(), deadline, "challenge from the launcher");
  if (std::memcmp(challenge.data(), "HVDL", 4) != 0) {
    throw ProtocolError("agent handshake: the peer is not an hvdrun launcher");
  }
  Nonce theirs{};
  std::memcpy(theirs.data(), challenge.data() + 4, theirs.size());
  const Nonce mine = fresh_nonce();
  write_exact(fd, bytes_of("HVDA", {mine, proof(secret, kAgentContext, theirs, mine)}), deadline);
  Mac answer{};
  read_exact(fd, answer.data(), answer.size(), deadline, "proof from the launcher");
  if (std::memcmp(answer.data(), kRefusal.data(), kRefusal.size()) == 0) {
    throw SecretMismatch(
        "agent handshake: the launcher refused this agent's proof: the secrets differ (give every "
        "node the same --rdzv-secret-file or HVDRUN_RDZV_SECRET)");
  }
  if (!rdzv::mac_equal(answer, proof(secret, kLauncherContext, theirs, mine))) {
    throw SecretMismatch(
        "agent handshake: the launcher's proof does not match this agent's secret: the secrets "
        "differ");
  }
}

}  // namespace hvdrun::launcher::agent
