// What the job's components ask of it (job.h, job_control.h): the end past a limit, the ranks'
// stacks (a straggler's host leaving is the membership's; the samples and ticks they watch are
// the ProgressSampler's).
#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

void Job::limit_reached(Limit limit, const std::string& reason) {
  carry_out(policy_->limit_reached(limit, reason, facts()), nullptr);
}

// This machine's running ranks by their pids, the remote ones from their agents (asked only
// when a collection can start).
void Job::collect_stacks(const std::string& why, const std::vector<int>& culprits,
                         std::function<void()> then) {
  StackDumps::Request request{why, culprits, {}, {}};
  if (!dumps_.busy()) {
    for (const auto& [id, pid] : pools_->local_pids()) {
      const WorkerRecord* record = workers_.find(id);
      if (!record || record->end()) continue;
      request.local.push_back({record->slot().rank, record->slot().host, pid});
    }
    for (const auto& id : pools_->request_remote_stacks()) {
      const WorkerRecord* record = workers_.find(id);
      request.remote.emplace(
          id, (record ? "rank " + std::to_string(record->slot().rank) : std::string("a rank")) +
                  " (host " + pools_->host_name(id.host) + ")");
    }
  }
  dumps_.collect(std::move(request), std::move(then));
}

// A remote worker's stacks, from its host's agent: its rank's file, and the collection goes on.
void Job::remote_stacks(const WorkerId& id, agent::StacksFrame frame) {
  const WorkerRecord* record = workers_.find(id);
  RankStacks r;
  r.target = {record ? record->slot().rank : -1, pools_->host_name(id.host), frame.pid};
  r.python = std::move(frame.python);
  r.native = std::move(frame.native);
  r.note = std::move(frame.note);
  dumps_.remote_came(id, std::move(r));
}

}  // namespace hvdrun::launcher
