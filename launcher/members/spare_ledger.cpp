// SpareLedger (spare_ledger.h).
#include "launcher/members/spare_ledger.h"

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

void SpareLedger::started(const WorkerId& id, Clock::time_point at) {
  started_at_[id] = at;
  ++started_;
}

void SpareLedger::promoted(const WorkerId& id, std::uint32_t key, const std::string& host,
                           Clock::time_point now) {
  const auto it = started_at_.find(id);
  const auto waited = it == started_at_.end() ? Clock::duration{} : now - it->second;
  if (it != started_at_.end()) started_at_.erase(it);
  ++promoted_;
  deaths_in_a_row_ = 0;
  promotions_.push_back("spare " + std::to_string(key) + " (host " + host + ", waiting " +
                        millis(waited) + ")");
}

bool SpareLedger::ended_while_waiting(const WorkerId& id) {
  started_at_.erase(id);
  ++ended_;
  if (++deaths_in_a_row_ >= kDeathsInARow) given_up_ = true;
  return given_up_;
}

bool SpareLedger::dismiss() {
  if (dismissed_all_) return false;
  dismissed_all_ = true;
  return true;
}

bool SpareLedger::first_shortfall(std::size_t added) {
  if (short_said_ || started_ != added) return false;
  short_said_ = true;
  return true;
}

std::string SpareLedger::describe() const {
  if (started_ == 0) return {};
  std::string text = "spares: " + std::to_string(started_) + " started, " +
                     std::to_string(promoted_) + " promoted";
  for (std::size_t i = 0; i < promotions_.size() && i < 3; ++i) {
    text += (i ? ", " : " (") + promotions_[i];
  }
  if (!promotions_.empty()) text += promotions_.size() > 3 ? ", ...)" : ")";
  text += ", " + std::to_string(ended_) + " ended while they waited, " +
          std::to_string(dismissed_) + " not needed at the end";
  return text;
}

}  // namespace hvdrun::launcher
