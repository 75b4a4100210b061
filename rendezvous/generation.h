// Membership of one generation: which workers (by key) are expected, which joined (with their
// data addresses), whether it is forming, active or failed, and the ASSIGN messages once it
// is complete. Pure state (no I/O); ServerCore sends. Thread: the server's io_context thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/protocol.h"
#include "rendezvous/server.h"

namespace hvdrun::rdzv {

class Session;

// "rank 2 (host a), rank 5 (host b) and 3 more": the slots not marked in `present`, by rank.
std::string describe_missing(const std::vector<Slot>& slots, const std::vector<bool>& present);

class Generation {
 public:
  enum class Phase { kForming, kActive, kFailed };

  // Throws UsageError unless the ranks are a permutation of 0..n-1 and the keys are unique.
  explicit Generation(std::vector<Member> members, std::uint32_t number = 0);

  std::uint32_t number() const noexcept { return number_; }
  Phase phase() const noexcept { return phase_; }
  std::size_t size() const noexcept { return slots_.size(); }
  std::size_t joined() const noexcept { return joined_; }
  bool complete() const noexcept { return phase_ == Phase::kForming && joined_ == slots_.size(); }
  // By position (the order the members were given).
  const std::vector<Slot>& slots() const noexcept { return slots_; }
  // The position of worker `key`, if it is a member.
  std::optional<std::size_t> position_of(std::uint32_t key) const;

  // Records the join or says why it is refused. `observed_ip` replaces an empty data_addr.
  std::optional<ErrorMsg> join(std::uint32_t msg_generation, const Join& join,
                               std::weak_ptr<Session> session, const std::string& observed_ip);
  // A worker whose connection dropped; ignored once the generation is active or failed.
  void leave(std::uint32_t key);
  // Marks the generation active and calls send(session, frame) with each member's ASSIGN
  // (its place and its ring neighbours' addresses: O(1) bytes per member).
  void activate(const std::function<void(Session&, std::vector<std::uint8_t>)>& send);
  // Marks it failed with `text` (later joins are refused with it); returns the members.
  std::vector<std::shared_ptr<Session>> fail(std::string text);
  // The sessions of the members that joined.
  std::vector<std::shared_ptr<Session>> sessions() const;
  // The session of the member at `position` while it is joined and connected, else null.
  std::shared_ptr<Session> session_at(std::size_t position) const;
  // "3/4 ranks joined; missing: rank 2 (host localhost)"
  std::string join_status() const;
  bool has_member(std::uint32_t key) const;

 private:
  struct Entry {
    std::weak_ptr<Session> session;
    Join join;
    bool present = false;
  };

  std::vector<Slot> slots_;                                  // by position
  std::vector<Entry> entries_;                               // by position
  std::unordered_map<std::uint32_t, std::size_t> position_;  // worker key -> position
  std::uint32_t number_ = 0;
  Phase phase_ = Phase::kForming;
  std::size_t joined_ = 0;
  std::string failure_;
};

}  // namespace hvdrun::rdzv
