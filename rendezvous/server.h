// Rendezvous server run inside the launcher on its one io_context thread (no locks).
// Authenticates each connection (HMAC challenge), gathers JOINs of the expected slots,
// answers each with ASSIGN when the generation is complete, serves the generation-scoped
// key-value store (blocking get with timeout), barriers and the NCCL unique-id relay
// (rank 0 sets a key, the others get it). Lifetime: the Server must outlive nothing but
// its io_context's run(); close() (or the destructor) closes every session.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/slot.h"
#include "rendezvous/protocol.h"

namespace boost::asio {
class io_context;
}

namespace hvdrun::rdzv {

// One expected member of a generation: the worker's key (its HVDRUN_SLOT, which it keeps for
// its whole life) and its place in that generation (rank and topology).
struct Member {
  std::uint32_t worker = 0;
  Slot slot;
};
// `slots` as members whose worker keys are their indices.
std::vector<Member> members_of(std::vector<Slot> slots);

// How a new generation takes over from the current one. kRestart: members still connected are
// refused (kStaleGeneration) and closed; their processes are being replaced. kBroken and
// kHostsUpdated: every joined worker is pushed a GenerationEnd on its connection and re-joins
// on it; with kHostsUpdated the old generation stays usable (its key-value store and barriers)
// until its members have re-joined.
enum class Handover { kRestart, kBroken, kHostsUpdated };

struct ServerOptions {
  std::string secret;       // job secret; never logged
  std::vector<Slot> slots;  // expected members of generation 0 (worker key = index)
  std::string bind_address = "127.0.0.1";
  std::uint16_t port = 0;  // 0 = ephemeral
  // Counted from the first JOIN: if not every slot joined by then, on_error is called with
  // a message naming the missing ranks and hosts, and joined workers receive kError.
  std::chrono::milliseconds start_timeout{30000};
  // The same for a generation formed by a handover (kBroken, kHostsUpdated); 0: start_timeout.
  std::chrono::milliseconds reform_timeout{0};
  // 0: no heartbeats. Else the server sends a Heartbeat to every joined worker at this
  // interval, and a joined worker it has not heard from for heartbeat_timeout is reported
  // through on_worker_lost (once; a late tick of the server's own thread never counts).
  std::chrono::milliseconds heartbeat_interval{0};
  std::chrono::milliseconds heartbeat_timeout{0};
  // A connection that has not authenticated within this time is closed.
  std::chrono::milliseconds auth_timeout{10000};
  // At most this many connections wait to authenticate (each an open file until it does or
  // auth_timeout closes it); past it, new connections wait in the listen backlog, and the
  // oldest waiting connection is closed once it has waited shed_after (a client answers its
  // challenge at once: one that does not must not hold the job's workers in the backlog for
  // the whole auth_timeout).
  std::size_t max_unauthenticated = 4096;
  std::chrono::milliseconds shed_after{2000};
  // Bounds on what authenticated clients can make the server hold (0: the default for the
  // job's size, see kv_limits_for()). A KvSet past a store limit is refused with kBadRequest
  // and that connection closed; a connection whose unread replies exceed
  // max_unsent_bytes is closed, with a logged reason.
  std::size_t kv_max_bytes = 0;  // keys plus values (plus 64 per entry), all generations
  std::size_t kv_max_keys = 0;
  std::size_t max_unsent_bytes = 0;
  // What the server holds for all connections together: unread replies and frames being read
  // beyond the read buffer. A connection whose reply or frame would pass it is closed, with a
  // logged reason.
  std::size_t max_held_bytes = 0;
};

// A job-level failure the launcher must act on, as a value: what kind (kTimeout: the start
// timeout passed; kJobFailed: the assignment could not be built) and the text naming who.
struct JobError {
  ErrorCode code = ErrorCode::kJobFailed;
  std::string message;
};

// The limits used where ServerOptions leaves 0, for a job of `slots` workers: the store
// max(256 MiB, 64 KiB per worker) and max(65,536, 64 keys per worker); unread replies
// 64 MiB per connection (four times the largest frame); all connections together hold at most
// max(256 MiB, 64 KiB per worker) of replies and frames.
struct KvLimits {
  std::size_t max_bytes = 0;
  std::size_t max_keys = 0;
  std::size_t max_unsent_bytes = 0;
  std::size_t max_held_bytes = 0;
};
KvLimits kv_limits_for(const ServerOptions& options);

struct ServerCallbacks {
  // Called on the io thread.
  std::function<void(const JobError& error)> on_error;
  // Every expected slot has joined and received ASSIGN.
  std::function<void()> on_complete;
  // A joined worker missed its heartbeats: `why` says for how long.
  std::function<void(std::uint32_t worker, const std::string& why)> on_worker_lost;
  // A warm spare's Join is held now: it waits, in no generation, for a place (add_spare).
  std::function<void(std::uint32_t spare)> on_spare_parked;
};

inline constexpr std::size_t kMaxHeldSamples = 4096;

// A member of the current generation and what its last heartbeat said of its collectives.
struct MemberProgress {
  std::uint32_t worker = 0;  // its key
  int rank = 0;
  std::string host;
  std::uint32_t pid = 0;
  std::optional<ProgressReport> report;  // none: no heartbeat with one yet
  std::chrono::milliseconds age{0};      // since that heartbeat came
};

class Server {
 public:
  // Binds and starts accepting immediately; throws NetworkError naming address:port.
  Server(boost::asio::io_context& io, ServerOptions options, ServerCallbacks callbacks = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const noexcept;
  // Number of slots that have joined the current generation.
  std::size_t joined() const noexcept;
  // Ends the current generation (members still connected get kStaleGeneration) and starts
  // forming the next one with `slots` (index = slot number); its key-value entries, barriers
  // and start timeout are its own, and the old generation's entries are dropped. Throws
  // UsageError for invalid slots.
  void start_generation(std::vector<Slot> slots);
  // The same with explicit worker keys and handover; `reason` goes into the GenerationEnd
  // pushed (kBroken, kHostsUpdated) or the refusal (kRestart). Returns the new number.
  std::uint32_t start_generation(std::vector<Member> members, Handover how, std::string reason);
  std::uint32_t generation() const noexcept;
  // Warm spares: worker `key` is a spare. Its Join is held, in no generation, until a
  // generation that has it as a member starts (its Join is then that generation's), or until
  // dismiss_spare(); heartbeats cover it meanwhile.
  void add_spare(std::uint32_t key);
  // The spare is not needed: its held Join (or its Join when it comes) is refused with
  // kNotMember and `why`.
  void dismiss_spare(std::uint32_t key, const std::string& why);
  // The spares whose Join is held now.
  std::size_t parked_spares() const noexcept;
  // The blocking gets that wait for their key now.
  std::size_t pending_gets() const noexcept;
  // The current generation's members, by rank, with their last progress reports; empty while
  // it forms (a member that has not joined has nothing to say).
  std::vector<MemberProgress> progress() const;
  // The current generation's timed collectives received since the last call (each member
  // holds at most kMaxHeldSamples until then).
  std::vector<TimedCollective> take_samples();
  // Stop accepting and close every session (pending waits get kError kJobFailed first).
  void close();

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace hvdrun::rdzv
