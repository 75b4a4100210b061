// The job's progress (job.h), as its components watch it: every second the members' timed
// collectives, taken from the rendezvous and grouped by collective (collective_groups.h), then
// the components' tick (the hang watch, the straggler monitor); what they ask of the job: the
// ranks' stacks, the end past a limit (a straggler's host leaving is the membership's).
#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

constexpr auto kTickInterval = std::chrono::seconds(1);

}  // namespace

// Every second: the members' timed collectives (told to the components), the Horovod spares'
// queries, then the components' tick.
void Job::watch_progress() {
  tick_timer_.expires_after(kTickInterval);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_.is(JobState::kFinished)) return;
    take_samples();
    spares_.check_horovod();
    publisher_.publish(&JobEvents::tick);
    watch_progress();
  });
}

void Job::take_samples() {
  auto samples = faces_.take_samples();
  if (samples.empty()) return;
  const auto groups =
      collective_groups_.add(std::move(samples), faces_.generation(), faces_.progress().size());
  publisher_.publish(&JobEvents::collectives_timed, groups);
}

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
