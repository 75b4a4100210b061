// The job's hosts (job.h): remote hosts that connect or fail (once the job runs, its
// membership decides what that changes), a worker whose host stopped answering.
#include <signal.h>

#include <algorithm>

#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

// hvdrun's stdin reaches only a rank 0 of this machine: a file given to a job whose rank 0 is
// remote would be lost without a word. (Not a pipe: `ssh head hvdrun ...` has one, unused.)
void Job::warn_if_stdin_not_read() const {
  if (!pools_->stdin_is_file()) return;
  const WorkerRecord* rank0 = workers_.rank_zero();
  if (!rank0 || !host_start_.is_remote(rank0->id.host)) return;
  note(
      "warning: hvdrun's stdin is not read: it reaches only a rank 0 on this machine, and "
      "rank 0 runs on host " +
      rank0->slot().host);
}

void Job::host_ready(std::size_t host, remote::HostReady ready) {
  // A host that joins a job under way (one the discovery script found, one that failed its
  // preflight check), if the membership takes hosts in.
  const bool later =
      membership_->takes_hosts_later() && (state_.active() || state_.is(JobState::kRestarting));
  if ((!state_.is(JobState::kConnecting) && !later) || outcome_) return;
  if (spec_.verbose) {
    if (ready.phases.empty()) {  // an agent that connected to hvdrun (srun)
      note("node agent of " + ready.where + " connected (route from " + ready.local_addr + ")");
    } else {
      note(ready.where + " as " + ready.user + ": " + ssh::describe_phases(ready.phases) +
           " (route from " + ready.local_addr + ")");
    }
    if (!ready.host_key_note.empty()) note(ready.host_key_note);
  }
  publisher_.publish(&JobEvents::host_connected, host, pools_->host_name(host), launched_,
                     ready.local_addr);
  pools_->host_connected(host, std::move(ready));
  if (later) return membership_->host_joined(host);
  if (host_start_.complete(pools_->connected_count())) start_workers();
}

void Job::host_failed(std::size_t host, const remote::HostFailed& failed) {
  if (state_.is(JobState::kFinished)) return;
  if (state_.is(JobState::kConnecting)) {
    host_start_.unusable(pools_->host_name(host), failed.message);
  }
  if (!state_.is(JobState::kConnecting) && membership_->host_failed_later(host, failed.message)) {
    return;
  }
  if (state_.is(JobState::kConnecting) && !outcome_ &&
      membership_->start_without_host(host, failed.message)) {
    host_start_.left_out();
    if (host_start_.complete(pools_->connected_count())) start_workers();
    return;
  }
  const std::string why =
      "cannot start the ranks of host " + pools_->host_name(host) + ": " + failed.message;
  fail(Outcome::failed(Outcome::Kind::kHostFailed, why), why);
  if (state_.is(JobState::kConnecting)) enter(JobState::kFinished);  // nothing runs anywhere yet
}

// The rendezvous heard nothing from the worker for too long: it is killed, and its end is a
// failure like any other. In a static job, which that failure ends, the ranks' stacks are
// collected first (the lost one's among them: a rank stuck in its own code, or stopped).
void Job::worker_lost(std::uint32_t key, const std::string& why) {
  if (!state_.active()) return;
  if (spares_.lost(key, why)) return;
  WorkerRecord* record = workers_.find(WorkerKey{key});
  if (!record || record->end()) return;
  if (membership_->stacks_before_losing() && state_.is(JobState::kRunning)) {
    collect_stacks("heartbeat timeout", {record->slot().rank},
                   [this, key, why] { kill_lost(key, why); });
    return;
  }
  kill_lost(key, why);
}

// The lost worker is killed, unless it ended meanwhile (then its own end is its failure).
void Job::kill_lost(std::uint32_t key, const std::string& why) {
  WorkerRecord* record = workers_.find(WorkerKey{key});
  if (!state_.active() || !record || record->end()) return;
  record->lost = "missed its heartbeats (" + why + "): killed";
  pools_->signal(record->id, SIGKILL);
  if (pools_->connected(record->id.host)) {
    // Over a cut-off network neither the kill nor the end may get through: the worker ends
    // here (a later report of its end is ignored).
    const WorkerId lost = record->id;
    worker_exited(lost, ProcessEnd::lost_connection("host " + pools_->host_name(lost.host) +
                                                    " stopped answering"));
  }
}

}  // namespace hvdrun::launcher
