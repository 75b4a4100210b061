// The rendezvous faces' events (job.h, RendezvousEvents): the rendezvous failed (the start
// timeout among them), every rank joined, and what elastic Horovod workers ask of the job.
#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

void Job::rendezvous_failed(const rdzv::JobError& error) {
  if (state_.is(JobState::kFinished)) return;
  if (state_.is(JobState::kRestarting)) {  // the generation it concerns is being replaced
    launcher_log()->debug("rendezvous error while restarting, ignored: {}", error.message);
    return;
  }
  if (!outcome_) {
    std::string text = error.message;
    if (error.code == rdzv::ErrorCode::kTimeout) {  // the start timeout
      text +=
          " (a missing rank has not called hvdrun::init(); raise --start-timeout if it is "
          "slow to start)";
    }
    fail(Outcome::failed(Outcome::Kind::kJobError, text), text);
    note("rendezvous failed; terminating " + plural(running(), "rank"));
    if (error.code == rdzv::ErrorCode::kTimeout && state_.is(JobState::kRunning)) {
      // Where the ranks that did not join are: before they are gone.
      collect_stacks("start timeout", {}, [this] {
        if (!state_.is(JobState::kRunning)) return;
        terminate();
        maybe_finish();
      });
      return;
    }
  }
  terminate();
  maybe_finish();
}

void Job::all_joined() {
  generations_.formed(Clock::now());
  workers_.clear_newcomers();
  if (spec_.verbose) {
    note("all " + plural(workers_.size(), "rank") + " joined the rendezvous, " +
         millis_since(launched_) + " after start");
  }
}

void Job::horovod_in_use(const std::string& peer) {
  if (const std::string text = policy_->horovod_in_use(peer); !text.empty()) note(text);
}

bool Job::horovod_reform_asked(std::size_t waiting) {
  if (!state_.is(JobState::kRunning) || outcome_) return false;
  return membership_->reform_asked(waiting);
}

}  // namespace hvdrun::launcher
