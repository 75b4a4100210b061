// Ring link setup: each rank connects to rank+1 and accepts rank-1 on its data listener.
// Both directions of a link prove the job secret: a 48-byte hello
//   u32 magic "HVDD" | u32 generation | u32 from rank | u32 to rank   (little-endian)
//   | HMAC-SHA256(secret, "data" || those 16 bytes)
// goes from the connecting rank; the accepting rank checks magic, generation, ranks and MAC
// and answers with its own hello (from/to swapped). A connection that fails any check is
// closed and the listener keeps accepting until the deadline, so a stray or hostile
// connection cannot break the ring. A connecting rank whose connection is closed before the
// answer (the accepting rank made room among held connections, or waited too long for the
// hello) connects again, a few times.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "rendezvous/protocol.h"
#include "worker-runtime/abort_signal.h"
#include "worker-runtime/tcp/socket.h"

namespace hvdrun::tcp {

struct RingIdentity {
  int rank = 0;
  int size = 1;
  std::uint32_t generation = 0;
  std::string secret;
  const AbortSignal* abort = nullptr;  // the wait for the previous rank watches it
};

// The data listeners a rank needs: its own (named in its failure reports) and those of its
// neighbours, ranks (rank - 1) and (rank + 1) mod size, as advertised.
struct RingAddresses {
  rdzv::PeerAddr self, prev, next;
};

struct RingLinks {
  UniqueFd next;  // connected to rank+1, send-only
  UniqueFd prev;  // accepted from rank-1, receive-only
};

// Connects both links (size >= 2). Throws TimeoutError naming the rank that did not
// connect or answer by `deadline`, NetworkError/ProtocolError for a peer that answers wrong.
RingLinks connect_ring(const RingIdentity& me, const RingAddresses& addresses, Listener& listener,
                       Clock::time_point deadline);
// "rank 3 (10.0.0.4:4242)"
std::string peer_text(int rank, const rdzv::PeerAddr& address);

}  // namespace hvdrun::tcp
