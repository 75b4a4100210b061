// What the job's components and parts ask of it (job_requests.h).
#include "launcher/job/job_requests.h"

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

JobRequests::JobRequests(boost::asio::io_context& io, const std::filesystem::path& stacks_dir,
                         RendezvousFaces& faces, Pools& pools, const WorkerTable& workers,
                         JobPublisher& publisher, Policy& policy, JobCore& core,
                         const std::unique_ptr<Membership>& membership)
    : faces_(faces),
      pools_(pools),
      workers_(workers),
      publisher_(publisher),
      policy_(policy),
      core_(core),
      membership_(membership),
      dumps_(io, stacks_dir,
             [this](const std::string& why, std::chrono::steady_clock::time_point began,
                    std::size_t ranks) {
               publisher_.publish(&JobEvents::stacks_collected, why, began, ranks);
             }) {}

bool JobRequests::end_job(const std::string& why) {
  const JobStateMachine& state = core_.lifecycle();
  if (!(state.active() || state.is(JobState::kRestarting))) return false;
  core_.fail(Outcome::failed(Outcome::Kind::kJobError, why), why);
  note(why + "; terminating " + plural(core_.running(), "rank"));
  core_.terminate();
  core_.maybe_finish();
  return true;
}

// This machine's running ranks by their pids, the remote ones from their agents (asked only
// when a collection can start).
void JobRequests::collect_stacks(const std::string& why, const std::vector<int>& culprits,
                                 std::function<void()> then) {
  StackDumps::Request request{why, culprits, {}, {}};
  if (!dumps_.busy()) {
    for (const auto& [id, pid] : pools_.local_pids()) {
      const WorkerRecord* record = workers_.find(id);
      if (!record || record->end()) continue;
      request.local.push_back({record->slot().rank, record->slot().host, pid});
    }
    for (const auto& id : pools_.request_remote_stacks()) {
      const WorkerRecord* record = workers_.find(id);
      request.remote.emplace(
          id, (record ? "rank " + std::to_string(record->slot().rank) : std::string("a rank")) +
                  " (host " + pools_.host_name(id.host) + ")");
    }
  }
  dumps_.collect(std::move(request), std::move(then));
}

void JobRequests::remote_stacks(const WorkerId& id, agent::StacksFrame frame) {
  const WorkerRecord* record = workers_.find(id);
  RankStacks r;
  r.target = {record ? record->slot().rank : -1, pools_.host_name(id.host), frame.pid};
  r.python = std::move(frame.python);
  r.native = std::move(frame.native);
  r.note = std::move(frame.note);
  dumps_.remote_came(id, std::move(r));
}

}  // namespace hvdrun::launcher
