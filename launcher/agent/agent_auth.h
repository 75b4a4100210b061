// The handshake that opens a node agent's TCP connection to the launcher (Slurm and per-node
// starts; over SSH the channel itself is authenticated). Both sides prove they know the job's
// secret before a frame is read, so an agent never obeys a stranger and the launcher never
// takes a stranger for a host:
//   launcher -> agent: "HVDL", nonce_l (32 bytes)
//   agent -> launcher: "HVDA", nonce_a (32 bytes), HMAC-SHA256(secret, "hvdrun node agent" ||
//                      nonce_l || nonce_a)
//   launcher -> agent: HMAC-SHA256(secret, "hvdrun launcher" || nonce_l || nonce_a)
//   (or, to an agent whose proof is wrong: a fixed refusal of the same size, so that the agent
//   can say that the secrets differ)
// Then the agent protocol (agent_protocol.h) runs on the connection. Fixed sizes, each read
// bounded by the deadline; a wrong proof is a ProtocolError on the launcher's side and a
// SecretMismatch on the agent's, a slow peer a TimeoutError, a launcher that closed before its
// challenge or its proof (busy, or it displaced this connection) a NetworkError: the agent
// connects again. The traffic after it is not encrypted (as the rendezvous's).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "hvdrun/error.h"
#include "rendezvous/auth.h"

namespace hvdrun::launcher::agent {

// The two sides' secrets differ (the agent's side).
class SecretMismatch : public ProtocolError {
 public:
  using ProtocolError::ProtocolError;
};

using HandshakeClock = std::chrono::steady_clock;

// The launcher's side, on an accepted connection (blocking or not).
void launcher_handshake(int fd, std::string_view secret, HandshakeClock::time_point deadline);
// The same in two steps, so that a launcher can decide between them whether to go on (an
// acceptor that displaced the connection meanwhile closes it before its proof, which the agent
// takes as "try again"): the challenge and the agent's proof checked; then the launcher's proof.
struct AgentProof {
  std::array<std::uint8_t, rdzv::kNonceSize> launcher{}, agent{};
};
AgentProof launcher_verify(int fd, std::string_view secret, HandshakeClock::time_point deadline);
void launcher_prove(int fd, std::string_view secret, const AgentProof& nonces,
                    HandshakeClock::time_point deadline);
// The agent's side, on its connection to the launcher.
void agent_handshake(int fd, std::string_view secret, HandshakeClock::time_point deadline);

}  // namespace hvdrun::launcher::agent
