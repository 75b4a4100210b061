// The job's restarts (job.h): a failure or a change of slots restarts every worker; once all
// ended, the membership starts the next generation.
#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

// A restart was chosen: the generation ends, every worker is stopped, and maybe_finish()
// starts the next generation once all have ended.
void Job::restart(const WorkerRecord& failed) {
  const ProcessEnd& end = *failed.end();
  const std::string what = failed.lost.empty() ? end.what_happened() : failed.lost;
  generations_.current().end_reason = failed.who() + " " + what;
  const std::size_t others = running();
  const std::string cooled = membership_->restarting_after(failed);
  requests_.happened("restart", {{"why", failed.who() + " " + what}});
  note(failed.who() + " " + what + cooled + "; restarting every rank (restart " +
       std::to_string(policy_->survived()) + " of " + std::to_string(spec_.max_restarts) + ")" +
       (others ? ": terminating " + plural(others, "other rank") : ""));
  enter(JobState::kRestarting);
}

// A change of slots restarts every worker (not counted as a restart) to take it in.
void Job::restart_for(const std::string& reason) {
  generations_.current().end_reason = reason;
  note(reason +
       ": restarting every rank to take the change in (not counted against "
       "--max-restarts); terminating " +
       plural(running(), "rank"));
  enter(JobState::kRestarting);
}

// Every worker of the generation has ended: the next one starts, with a new rendezvous
// generation and MASTER_PORT.
void Job::start_next_generation() {
  generations_.current().ended = Clock::now();
  pools_->rendezvous().restart_count = policy_->restart_count(generations_.count());
  const std::string reason = generations_.current().end_reason;  // a copy: a generation begins
  membership_->start_next_generation(reason);
}

}  // namespace hvdrun::launcher
