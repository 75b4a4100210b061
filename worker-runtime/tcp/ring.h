// CPU collectives over a TCP ring: rank r sends to r+1 and receives from r-1.
// allreduce: reduce-scatter then all-gather (2(P-1)/P of the data per rank), chunked and
// pipelined across steps (up to 64 KiB in total: gather everything, reduce locally); broadcast: a
// pipelined chain from the root; allgather: counts first, then blocks forwarded around the ring;
// barrier: a one-byte allreduce.
//
// Thread and lifetime rules: one thread at a time per Ring; every rank calls the same
// collectives in the same order (each sends a descriptor ahead of its data, which the next
// rank checks: a mismatch is a MismatchError naming both sides, see tcp/collective_check.h). Any
// error (peer closed or reset, no progress for `timeout`, protocol breach) closes both links, so
// neighbours fail promptly too, and leaves the Ring broken: later calls throw at once. With a
// FailureBoard, the rank posts its view first and names the rank the failure started at
// (tcp/blame.h). A size-1 Ring has no sockets.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hvdrun/types.h"
#include "rendezvous/protocol.h"
#include "worker-runtime/tcp/collective_check.h"
#include "worker-runtime/tcp/failure_board.h"
#include "worker-runtime/tcp/handshake.h"
#include "worker-runtime/tcp/socket.h"
#include "worker-runtime/tcp/transfer.h"

namespace hvdrun::tcp {

class Ring {
 public:
  // Connects the ring (size >= 2: `addresses` are this rank's advertised data listener and its
  // neighbours'; `listener` is this rank's, already bound; it is closed once the ring is up). Waits
  // at most `timeout` for the setup; afterwards `timeout` bounds every wait for a peer. `abort`
  // (null: none) interrupts the setup's wait for the previous rank and, kept for every collective,
  // any later wait (see set_abort_signal).
  Ring(int rank, int size, RingAddresses addresses, Listener listener, std::string secret,
       std::uint32_t generation, std::chrono::milliseconds timeout,
       const AbortSignal* abort = nullptr);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  std::uint32_t generation() const noexcept { return links_.generation; }
  bool broken() const noexcept { return static_cast<bool>(failure_); }
  // This rank's data listener and its neighbours', as given.
  const RingAddresses& addresses() const noexcept { return addresses_; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op);
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root);
  // Rank-ordered concatenation into `out`; returns every rank's count.
  std::vector<std::size_t> allgather(const void* send, std::size_t count, DataType dtype,
                                     std::vector<std::byte>& out);
  void barrier();
  // Only the descriptor of a collective that runs elsewhere (a device call): the ranks compare
  // it as for their own collectives (MismatchError naming both sides); no data moves.
  void check_call(CollectiveKind kind, DataType dtype, ReduceOp op, std::size_t count, int root);

  // The next collective is numbered 1 in descriptors and messages (after the runtime's own
  // set-up calls, so that "#12" is the program's twelfth). Every rank does it at the same call.
  void number_from_here() noexcept { calls_ = 0; }

  // Where this rank posts and reads failure reports (shared with the other ranks of this
  // generation); null: errors name only what this rank's own links saw.
  void set_failure_board(std::shared_ptr<FailureBoard> board) noexcept {
    board_ = std::move(board);
  }

  // Every wait of this ring's collectives also watches `signal` (null: none); once it is
  // raised, the pending or next collective throws AbortedError and the ring is unusable.
  void set_abort_signal(const AbortSignal* signal) noexcept { links_.abort = signal; }

  // Closes both links (the neighbours see the connection end); later calls throw.
  void abort() noexcept;

 private:
  template <class Fn>
  void guarded(std::string_view what, Fn&& fn);
  void small_allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                       const Descriptor& call);
  void ring_allgather(std::vector<std::byte*> blocks, const std::vector<std::size_t>& sizes,
                      std::string_view what, const Descriptor* descriptor);
  // The next collective's descriptor (its sequence number taken), sent and checked with `plan`.
  Descriptor next_call(CollectiveKind kind, DataType dtype, ReduceOp op, std::size_t count,
                       int root);
  void check_with(Plan& plan, const Descriptor& mine, std::string_view what);
  // A collective without data (a count of 0, a device call's check): the descriptor alone.
  void exchange_descriptor(const Descriptor& call, std::string_view what);

  int rank_;
  int size_;
  RingAddresses addresses_;
  UniqueFd next_, prev_;
  Links links_;
  std::vector<std::byte> staging_;
  std::uint64_t calls_ = 0;  // collectives that went over the links
  DescriptorBytes header_out_{}, header_in_{};
  std::shared_ptr<FailureBoard> board_;
  std::exception_ptr failure_;  // the first error; the Ring is unusable after it
};

}  // namespace hvdrun::tcp
