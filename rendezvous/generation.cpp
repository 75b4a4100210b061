// Membership of the current generation and the ASSIGN messages built when it is complete.
#include "rendezvous/generation.h"

#include <algorithm>

#include "hvdrun/error.h"
#include "rendezvous/session.h"

namespace hvdrun::rdzv {
namespace {

constexpr std::size_t kMaxNamed = 10;  // missing ranks named before "and N more"

}  // namespace

std::string describe_missing(const std::vector<Slot>& slots, const std::vector<bool>& present) {
  std::vector<const Slot*> missing;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (i >= present.size() || !present[i]) missing.push_back(&slots[i]);
  }
  const std::size_t named = std::min(missing.size(), kMaxNamed);
  std::partial_sort(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(named),
                    missing.end(), [](const Slot* a, const Slot* b) { return a->rank < b->rank; });
  std::string out;
  for (std::size_t i = 0; i < named; ++i) {
    if (i > 0) out += ", ";
    out += "rank " + std::to_string(missing[i]->rank) + " (host " + missing[i]->host + ")";
  }
  if (missing.size() > named) out += " and " + std::to_string(missing.size() - named) + " more";
  return out;
}

Generation::Generation(std::vector<Member> members, std::uint32_t number)
    : entries_(members.size()), number_(number) {
  if (members.size() > kMaxPeers) {
    throw UsageError("rendezvous: " + std::to_string(members.size()) +
                     " members exceed the limit of " + std::to_string(kMaxPeers));
  }
  std::vector<bool> seen(members.size());
  slots_.reserve(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int rank = members[i].slot.rank;
    if (rank < 0 || static_cast<std::size_t>(rank) >= members.size() || seen[rank]) {
      throw UsageError("rendezvous: slot " + std::to_string(i) + " has rank " +
                       std::to_string(rank) + ", not a unique rank in 0.." +
                       std::to_string(members.size() - 1));
    }
    seen[rank] = true;
    if (!position_.emplace(members[i].worker, i).second) {
      throw UsageError("rendezvous: worker " + std::to_string(members[i].worker) +
                       " is listed twice in generation " + std::to_string(number));
    }
    slots_.push_back(std::move(members[i].slot));
  }
}

std::optional<std::size_t> Generation::position_of(std::uint32_t key) const {
  const auto it = position_.find(key);
  if (it == position_.end()) return std::nullopt;
  return it->second;
}

std::optional<ErrorMsg> Generation::join(std::uint32_t msg_generation, const Join& join,
                                         std::weak_ptr<Session> session,
                                         const std::string& observed_ip) {
  if (msg_generation != number_) {
    return ErrorMsg{ErrorCode::kStaleGeneration,
                    "Join of slot " + std::to_string(join.slot) + " for generation " +
                        std::to_string(msg_generation) + " refused: current generation is " +
                        std::to_string(number_)};
  }
  if (phase_ == Phase::kFailed) {
    return ErrorMsg{ErrorCode::kJobFailed,
                    "generation " + std::to_string(number_) + " failed: " + failure_};
  }
  const auto position = position_of(join.slot);
  if (!position && number_ == 0 && join.slot >= slots_.size()) {
    return ErrorMsg{ErrorCode::kBadRequest, "slot " + std::to_string(join.slot) +
                                                " out of range: the job has " +
                                                std::to_string(slots_.size()) + " slots"};
  }
  if (!position) {
    return ErrorMsg{ErrorCode::kNotMember,
                    "worker " + std::to_string(join.slot) + " (pid " + std::to_string(join.pid) +
                        ") is not a member of generation " + std::to_string(number_)};
  }
  Entry& m = entries_[*position];
  if (m.present) {
    return ErrorMsg{ErrorCode::kDuplicateSlot,
                    "slot " + std::to_string(join.slot) + " already joined by pid " +
                        std::to_string(m.join.pid) + " (host " + m.join.host + "); refused pid " +
                        std::to_string(join.pid) + " (host " + join.host + ")"};
  }
  m.session = std::move(session);
  m.join = join;
  if (m.join.data_addr.empty()) m.join.data_addr = observed_ip;
  m.present = true;
  ++joined_;
  return std::nullopt;
}

void Generation::leave(std::uint32_t key) {
  const auto position = position_of(key);
  if (phase_ != Phase::kForming || !position || !entries_[*position].present) return;
  entries_[*position] = Entry{};
  --joined_;
}

bool Generation::has_member(std::uint32_t key) const {
  const auto position = position_of(key);
  return position && entries_[*position].present;
}

void Generation::activate(const std::function<void(Session&, std::vector<std::uint8_t>)>& send) {
  phase_ = Phase::kActive;
  const std::size_t n = slots_.size();
  std::vector<std::size_t> by_rank(n);  // position of each rank
  for (std::size_t position = 0; position < n; ++position) {
    by_rank[static_cast<std::size_t>(slots_[position].rank)] = position;
  }
  const auto data_of = [&](std::size_t rank) {
    const Join& j = entries_[by_rank[rank]].join;
    return PeerAddr{j.data_addr, j.data_port};
  };
  Message message{number_, Assign{}};
  auto& assign = std::get<Assign>(message.body);
  assign.size = static_cast<std::int32_t>(n);
  for (std::size_t position = 0; position < n; ++position) {
    auto session = entries_[position].session.lock();
    if (!session) continue;
    const Slot& info = slots_[position];
    const auto rank = static_cast<std::size_t>(info.rank);
    assign.rank = info.rank;
    assign.local_rank = info.local_rank;
    assign.local_size = info.local_size;
    assign.cross_rank = info.cross_rank;
    assign.cross_size = info.cross_size;
    assign.prev = data_of((rank + n - 1) % n);
    assign.next = data_of((rank + 1) % n);
    send(*session, encode(message));
  }
}

std::vector<std::shared_ptr<Session>> Generation::fail(std::string text) {
  phase_ = Phase::kFailed;
  failure_ = std::move(text);
  return sessions();
}

std::vector<std::shared_ptr<Session>> Generation::sessions() const {
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& m : entries_) {
    if (auto s = m.session.lock(); s && m.present) out.push_back(std::move(s));
  }
  return out;
}

std::shared_ptr<Session> Generation::session_at(std::size_t position) const {
  const Entry& e = entries_.at(position);
  return e.present ? e.session.lock() : nullptr;
}

std::string Generation::join_status() const {
  std::vector<bool> present(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) present[i] = entries_[i].present;
  return std::to_string(joined_) + "/" + std::to_string(slots_.size()) +
         " ranks joined; missing: " + describe_missing(slots_, present);
}

}  // namespace hvdrun::rdzv
