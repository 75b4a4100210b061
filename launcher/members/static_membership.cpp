// A static job's generations (static_membership.h).
#include "launcher/members/static_membership.h"

#include <algorithm>
#include <vector>

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

// Every worker of the generation has ended: the same slots start again as new incarnations,
// with a new rendezvous generation and MASTER_PORT.
void StaticMembership::start_next_generation(const std::string& reason) {
  WorkerTable next;
  std::vector<rdzv::Member> members;
  parts_.workers.for_each([&](const WorkerRecord& r) {
    const WorkerId incarnation{r.id.host, r.id.slot, r.id.incarnation + 1};
    parts_.sink.add_worker(incarnation, r.slot().rank, r.slot().host);
    // A fresh key: a late process of the old generation is no member of the new one.
    next.add(incarnation, WorkerKey{next_key_}, r.slot());
    members.push_back({next_key_++, r.slot()});
  });
  parts_.workers = std::move(next);
  std::sort(members.begin(), members.end(),
            [](const rdzv::Member& a, const rdzv::Member& b) { return a.slot.rank < b.slot.rank; });
  const std::size_t size = members.size();
  parts_.start_generation({std::move(members), rdzv::Handover::kRestart, reason, {}});
  parts_.publisher.generation_ended();
  parts_.generations.begin(GenerationLog::Clock::now(), size);
  parts_.core.start_workers();
}

void StaticMembership::reform(const WorkerId* /*ended*/, rdzv::Handover /*how*/,
                              const std::string& reason) {
  launcher_log()->error("a job whose slots never change was asked to re-form ({})", reason);
  Action fail;
  fail.kind = Action::Kind::kFailJob;
  fail.reason =
      "internal error: a job whose slots never change was asked to re-form (" + reason + ")";
  parts_.core.carry_out(fail);
}

}  // namespace hvdrun::launcher
