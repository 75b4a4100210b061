// The ring's data mover: streams bytes to the next rank while receiving from the previous
// one, in one thread with non-blocking sockets and poll(). A collective is described as a
// Plan: the ordered pieces of the outgoing stream, the ordered pieces of the incoming stream
// (each stored directly or reduced into place), and how much of the outgoing stream is
// ready before anything arrives. Byte k of the outgoing stream beyond that becomes ready
// once byte k of the incoming stream is stored, which is what lets one step's receive feed
// the next step's send chunk by chunk (pipelining across ring steps). A Plan may also carry a
// fixed-size header (the collective's descriptor, tcp/collective_check.h): sent ahead of the
// outgoing stream, received ahead of the incoming one and checked before any incoming data
// byte is reduced or forwarded (the first stored piece may already hold some).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hvdrun/types.h"
#include "worker-runtime/abort_signal.h"

namespace hvdrun::tcp {

struct SendPiece {
  const std::byte* data = nullptr;
  std::size_t size = 0;
};

struct RecvPiece {
  std::byte* data = nullptr;  // where the result goes
  std::size_t size = 0;
  // Null: store the received bytes. Otherwise: data = op(local, received) element-wise
  // (local may equal data).
  const std::byte* local = nullptr;
};

struct Plan {
  std::vector<SendPiece> send;
  std::vector<RecvPiece> recv;
  std::size_t send_ready = 0;  // outgoing bytes available before anything is received
  DataType dtype = DataType::kUInt8;
  ReduceOp op = ReduceOp::kSum;
  // The header: header_size bytes from header_out go first; header_size bytes arrive into
  // header_in first, then check_header runs (it throws to end the transfer). Size 0: none.
  const std::byte* header_out = nullptr;
  std::byte* header_in = nullptr;
  std::size_t header_size = 0;
  std::function<void()> check_header;
};

// The two links of one rank and the names used in error messages.
struct Links {
  int next_fd = -1;  // we only send on it
  int prev_fd = -1;  // we only receive on it
  int next_rank = 0, prev_rank = 0;
  std::string next_addr, prev_addr;  // "host:port" of the peers' data listeners
  std::uint32_t generation = 0;
  std::chrono::milliseconds timeout{60000};  // longest time without progress
  const AbortSignal* abort = nullptr;        // watched in every wait; null: none
};

// What a failed transfer saw on one link. The NetworkError, TimeoutError and ProtocolError that
// run_plan() throws also derive from LinkFault: dynamic_cast<const LinkFault*>(&error).
struct LinkFault {
  enum class Kind {
    kClosed,   // the peer closed or reset the connection (perhaps because it failed first)
    kStalled,  // nothing moved for `timeout`
    kBreach,   // the peer sent bytes on a send-only link
  };
  LinkFault(int peer_rank, Kind fault_kind, std::string peer_did, std::string seen)
      : peer(peer_rank), kind(fault_kind), how(std::move(peer_did)), observed(std::move(seen)) {}
  virtual ~LinkFault() = default;

  int peer;  // the rank at the other end of the failed link
  Kind kind;
  std::string how;       // what the peer did, as other ranks report it: "connection lost: ..."
  std::string observed;  // this rank's view: "connection to rank 1 (host:port) lost: ..."
};

// An error of kind E (NetworkError, ...) that carries its LinkFault.
template <class E>
class LinkError final : public E, public LinkFault {
 public:
  LinkError(const std::string& message, LinkFault fault)
      : E(message), LinkFault(std::move(fault)) {}
  // A layer that adds context keeps the kind and what the link saw.
  [[noreturn]] void rethrow_as(std::string message) const override {
    throw LinkError(message, static_cast<const LinkFault&>(*this));
  }
};

// Moves the plan's bytes. `staging` is scratch space for reduced pieces (its size is the
// reduction chunk; a multiple of 8). Throws NetworkError when a peer closes or resets,
// TimeoutError when nothing moves for links.timeout, ProtocolError when the next rank sends
// bytes on a send-only link (each a LinkError), AbortedError as soon as links.abort is raised;
// messages start with `what` (the collective's name).
void run_plan(const Links& links, const Plan& plan, std::vector<std::byte>& staging,
              std::string_view what);

}  // namespace hvdrun::tcp
