// CollectiveGroups (collective_groups.h).
#include "launcher/job/collective_groups.h"

#include <algorithm>

namespace hvdrun::launcher {

std::uint32_t CollectiveGroup::transfer_us() const {
  std::uint32_t shortest = UINT32_MAX;
  for (const auto& m : members) shortest = std::min(shortest, m.inside_us);
  return members.empty() ? 0 : shortest;
}

std::uint32_t CollectiveGroup::wait_us(const rdzv::TimedCollective& member) const {
  return member.inside_us - std::min(member.inside_us, transfer_us());
}

std::vector<CollectiveGroup> CollectiveGroups::add(std::vector<rdzv::TimedCollective> samples,
                                                   std::uint32_t generation, std::size_t size) {
  if (size > 0) sizes_[generation] = size;  // 0: it forms, nobody has joined it yet
  while (sizes_.size() > 16) sizes_.erase(sizes_.begin());
  std::vector<CollectiveGroup> out;
  for (auto& sample : samples) {
    const auto known = sizes_.find(sample.generation);
    if (known == sizes_.end()) continue;  // a generation long gone
    const auto key = std::make_pair(sample.generation, sample.sequence);
    Pending& pending = pending_[key];
    pending.size = known->second;
    auto& members = pending.group.members;
    if (std::any_of(members.begin(), members.end(),
                    [&](const auto& m) { return m.worker == sample.worker; })) {
      continue;
    }
    members.push_back(std::move(sample));
    if (pending.group.members.size() >= pending.size) {
      pending.group.complete = true;
      out.push_back(std::move(pending.group));
      pending_.erase(key);
    }
  }
  while (pending_.size() > kMaxPending) {  // never completed: a member ended without its time
    out.push_back(std::move(pending_.begin()->second.group));
    pending_.erase(pending_.begin());
  }
  return out;
}

std::vector<CollectiveGroup> CollectiveGroups::flush() {
  std::vector<CollectiveGroup> out;
  for (auto& [key, pending] : pending_) out.push_back(std::move(pending.group));
  pending_.clear();
  return out;
}

}  // namespace hvdrun::launcher
