// Membership of the current generation and the ASSIGN messages built when it is complete.
#include "rendezvous/generation.h"

#include <algorithm>

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

std::string describe_duration(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

Generation::Generation(std::vector<Slot> slots, std::uint32_t number)
    : slots_(std::move(slots)), members_(slots_.size()), number_(number) {}

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
  if (join.slot >= slots_.size()) {
    return ErrorMsg{ErrorCode::kBadRequest, "slot " + std::to_string(join.slot) +
                                                " out of range: the job has " +
                                                std::to_string(slots_.size()) + " slots"};
  }
  Member& m = members_[join.slot];
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

void Generation::leave(std::uint32_t slot) {
  if (phase_ != Phase::kForming || slot >= members_.size() || !members_[slot].present) return;
  members_[slot] = Member{};
  --joined_;
}

bool Generation::has_member(std::uint32_t slot) const {
  return slot < members_.size() && members_[slot].present;
}

void Generation::activate(const std::function<void(Session&, std::vector<std::uint8_t>)>& send) {
  phase_ = Phase::kActive;
  Message message{number_, Assign{}};
  auto& assign = std::get<Assign>(message.body);
  assign.size = static_cast<std::int32_t>(slots_.size());
  assign.peers.resize(slots_.size());
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    const auto& j = members_[slot].join;
    assign.peers[static_cast<std::size_t>(slots_[slot].rank)] = PeerAddr{j.data_addr, j.data_port};
  }
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    auto session = members_[slot].session.lock();
    if (!session) continue;
    const Slot& info = slots_[slot];
    assign.rank = info.rank;
    assign.local_rank = info.local_rank;
    assign.local_size = info.local_size;
    assign.cross_rank = info.cross_rank;
    assign.cross_size = info.cross_size;
    send(*session, encode(message));
  }
}

std::vector<std::shared_ptr<Session>> Generation::fail(std::string text) {
  phase_ = Phase::kFailed;
  failure_ = std::move(text);
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& m : members_) {
    if (auto s = m.session.lock(); s && m.present) out.push_back(std::move(s));
  }
  return out;
}

std::string Generation::join_status() const {
  std::vector<bool> present(members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i) present[i] = members_[i].present;
  return std::to_string(joined_) + "/" + std::to_string(slots_.size()) +
         " ranks joined; missing: " + describe_missing(slots_, present);
}

}  // namespace hvdrun::rdzv
