// The job's timed collectives (job.h): taken from the rendezvous every second, grouped by
// collective (collective_groups.h) and told to the components (the straggler monitor, the
// timeline); a persistent straggler's host leaving an elastic job when the monitor finds one.
#include <signal.h>

#include "common/duration_text.h"
#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

void Job::take_samples() {
  auto samples = faces_.take_samples();
  if (samples.empty()) return;
  const auto groups =
      collective_groups_.add(std::move(samples), faces_.generation(), faces_.progress().size());
  publish(&JobEvents::collectives_timed, groups);
}

// --exclude-stragglers: the host of a rank persistently the last to arrive cools down and the
// others re-form without it, if the policy takes it (--min-np workers remain, --reset-limit).
bool Job::straggler_found(std::uint32_t key, const std::string& verdict) {
  const WorkerRecord* straggler = workers_.find(WorkerKey{key});
  if (straggler == nullptr || straggler->end()) return false;
  const std::size_t host = straggler->id.host;
  std::vector<WorkerId> on_host;
  workers_.for_each([&](const WorkerRecord& r) {
    if (r.id.host == host && !r.end()) on_host.push_back(r.id);
  });
  const auto now = Clock::now();
  // Signed: the host's workers may include newcomers that are no members yet.
  const long left = static_cast<long>(membership_->live()) - static_cast<long>(on_host.size()) +
                    static_cast<long>(membership_->free_slots(now));
  StragglerFound found;
  found.verdict = verdict;
  found.reason = "straggler: " + found.verdict + " (--exclude-stragglers, margin " +
                 describe_duration(spec_.elastic.straggler_margin) + ")";
  found.host = pools_.host_name(host);
  found.left = left < 0 ? 0 : static_cast<std::size_t>(left);
  const Action action = policy_->straggler_found(found, facts());
  if (action.kind != Action::Kind::kReform) {
    carry_out(action, nullptr);
    return false;
  }
  const std::string& reason = found.reason;
  generations_.current().ended = now;
  generations_.current().end_reason = reason;
  const auto cooldown = membership_->cool_down(host, now);
  for (const WorkerId& id : on_host) {
    membership_->remove(workers_.find(id)->key.value);
    pools_.signal(id, SIGKILL);
    workers_.erase(id);  // its end, when it comes, is ignored
  }
  event_happened("straggler excluded", {{"host", pools_.host_name(host)}, {"why", verdict}});
  note(reason + "; host " + pools_.host_name(host) + " unused for " +
       std::to_string(cooldown.count()) + " s; re-forming with " +
       plural(membership_->live(), "worker") + " (" + plural(on_host.size(), "worker") +
       " stopped there)");
  carry_out(action, nullptr);
  return true;
}

}  // namespace hvdrun::launcher
