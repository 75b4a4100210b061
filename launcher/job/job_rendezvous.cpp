// The rendezvous faces' events (job_rendezvous.h).
#include "launcher/job/job_rendezvous.h"

#include <signal.h>

#include <algorithm>

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

void JobRendezvous::rendezvous_failed(const rdzv::JobError& error) {
  JobCore& core = parts_.core;
  const JobStateMachine& state = core.lifecycle();
  if (state.is(JobState::kFinished)) return;
  if (state.is(JobState::kRestarting)) {  // the generation it concerns is being replaced
    launcher_log()->debug("rendezvous error while restarting, ignored: {}", error.message);
    return;
  }
  if (!core.outcome()) {
    std::string text = error.message;
    if (error.code == rdzv::ErrorCode::kTimeout) {  // the start timeout
      text +=
          " (a missing rank has not called hvdrun::init(); raise --start-timeout if it is "
          "slow to start)";
    }
    core.fail(Outcome::failed(Outcome::Kind::kJobError, text), text);
    note("rendezvous failed; terminating " + plural(core.running(), "rank"));
    if (error.code == rdzv::ErrorCode::kTimeout && state.is(JobState::kRunning)) {
      // Where the ranks that did not join are: before they are gone.
      parts_.requests.collect_stacks("start timeout", {}, [&core] {
        if (!core.lifecycle().is(JobState::kRunning)) return;
        core.terminate();
        core.maybe_finish();
      });
      return;
    }
  }
  core.terminate();
  core.maybe_finish();
}

void JobRendezvous::all_joined() {
  parts_.generations.formed(GenerationLog::Clock::now());
  parts_.workers.clear_newcomers();
  if (parts_.spec.verbose) {
    note("all " + plural(parts_.workers.size(), "rank") + " joined the rendezvous, " +
         millis_since(parts_.generations.launched()) + " after start");
  }
}

void JobRendezvous::horovod_in_use(const std::string& peer) {
  if (const std::string text = parts_.policy->horovod_in_use(peer); !text.empty()) note(text);
}

bool JobRendezvous::horovod_reform_asked(std::size_t waiting) {
  if (!parts_.core.lifecycle().is(JobState::kRunning) || parts_.core.outcome()) return false;
  return parts_.membership->reform_asked(waiting);
}

// The rendezvous heard nothing from the worker for too long: it is killed, and its end is a
// failure like any other. In a static job, which that failure ends, the ranks' stacks are
// collected first (the lost one's among them: a rank stuck in its own code, or stopped).
void JobRendezvous::worker_lost(std::uint32_t key, const std::string& why) {
  const JobStateMachine& state = parts_.core.lifecycle();
  if (!state.active()) return;
  if (parts_.membership->spares().lost(key, why)) return;
  WorkerRecord* record = parts_.workers.find(WorkerKey{key});
  if (!record || record->end()) return;
  if (parts_.membership->stacks_before_losing() && state.is(JobState::kRunning)) {
    parts_.requests.collect_stacks("heartbeat timeout", {record->slot().rank},
                                   [this, key, why] { kill_lost(key, why); });
    return;
  }
  kill_lost(key, why);
}

void JobRendezvous::kill_lost(std::uint32_t key, const std::string& why) {
  WorkerRecord* record = parts_.workers.find(WorkerKey{key});
  if (!parts_.core.lifecycle().active() || !record || record->end()) return;
  record->lost = "missed its heartbeats (" + why + "): killed";
  Pools& pools = *parts_.pools;
  const WorkerId lost = record->id;
  const auto local = pools.local_pids();
  const auto here = std::find_if(local.begin(), local.end(),
                                 [&](const auto& worker) { return worker.first == lost; });
  pools.signal(lost, SIGKILL);
  // The worker ends here (a later report of its end is ignored): the first failure is its,
  // not that of a peer whose connection to it broke, whichever end is reported first; and over
  // a cut-off network neither the kill nor the end may get through.
  if (here != local.end()) {
    ProcessEnd end = ProcessEnd::signaled(SIGKILL);
    end.pid = here->second;
    parts_.pool_events.worker_exited(lost, std::move(end));
  } else if (pools.connected(lost.host)) {
    parts_.pool_events.worker_exited(
        lost,
        ProcessEnd::lost_connection("host " + pools.host_name(lost.host) + " stopped answering"));
  }
}

}  // namespace hvdrun::launcher
