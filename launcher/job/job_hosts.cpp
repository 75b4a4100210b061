// The job's hosts (job.h): remote hosts that connect or fail (once the job runs, its
// membership decides what that changes).
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
  publisher_.publish(&JobEvents::host_connected, host, pools_->host_name(host),
                     generations_.launched(), ready.local_addr);
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

}  // namespace hvdrun::launcher
