// plan_communicator() (see comm_plan.h).
#include "worker-runtime/nccl/comm_plan.h"

#include <algorithm>
#include <cstddef>

#include "worker-runtime/nccl/backend_choice.h"

namespace hvdrun::nccl {
namespace {

// "1, 3" for the ranks whose report matches `test`.
template <class Test>
std::string ranks_where(std::span<const MemberComm> members, Test&& test) {
  std::string list;
  for (std::size_t r = 0; r < members.size(); ++r) {
    if (test(members[r])) list += (list.empty() ? "" : ", ") + std::to_string(r);
  }
  return list;
}

CommPlan fresh(std::string reason) {
  return {false, {}, "new communicator: " + std::move(reason)};
}

}  // namespace

CommPlan plan_communicator(std::span<const MemberComm> members) {
  if (members.empty()) return fresh("no ranks");
  const auto none = [](const MemberComm& m) { return !m.has_previous; };
  if (std::all_of(members.begin(), members.end(), none)) return fresh("no rank has one yet");
  if (const std::string newcomers = ranks_where(members, none); !newcomers.empty()) {
    return fresh("rank(s) " + newcomers + " joined");
  }
  const MemberComm& first = members.front();
  const std::string other = ranks_where(members, [&](const MemberComm& m) {
    return m.generation != first.generation || m.size != first.size;
  });
  if (!other.empty()) return fresh("rank(s) " + other + " come from another communicator");
  for (std::size_t r = 0; r < members.size(); ++r) {
    if (!members[r].has_shrink) {
      return fresh("rank " + std::to_string(r) + "'s " +
                   nccl_version_text(members[r].nccl_version) +
                   " has no ncclCommShrink (NCCL 2.27 or later)");
    }
  }
  const std::string dead = ranks_where(members, [](const MemberComm& m) { return !m.alive; });
  if (!dead.empty()) {
    return fresh("the communicator of rank(s) " + dead + " was aborted (NCCL error or timeout)");
  }
  for (std::size_t r = 0; r < members.size(); ++r) {
    const MemberComm& m = members[r];
    if (m.device != m.previous_device) {
      return fresh("rank " + std::to_string(r) + " moves from device " +
                   std::to_string(m.previous_device) + " to " + std::to_string(m.device));
    }
    const bool ordered = r == 0 || members[r - 1].rank < m.rank;
    if (m.rank < 0 || m.rank >= m.size || !ordered) {
      return fresh("the survivors' ranks are not in their earlier order");
    }
  }
  if (members.size() >= static_cast<std::size_t>(first.size)) {
    return fresh("no rank left generation " + std::to_string(first.generation));
  }
  CommPlan plan;
  plan.shrink = true;
  std::size_t next = 0;
  for (int old = 0; old < first.size; ++old) {
    if (next < members.size() && members[next].rank == old) {
      ++next;
    } else {
      plan.excluded.push_back(old);
    }
  }
  std::string list;
  for (int old : plan.excluded) list += (list.empty() ? "" : ", ") + std::to_string(old);
  plan.reason = "shrinking the communicator of generation " + std::to_string(first.generation) +
                " from " + std::to_string(first.size) + " to " + std::to_string(members.size()) +
                " ranks (without old rank(s) " + list + ")";
  return plan;
}

}  // namespace hvdrun::nccl
