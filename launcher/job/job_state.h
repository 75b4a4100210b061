// The job's lifecycle, one state at a time, changed only through JobStateMachine::enter(),
// which refuses (and says so, loudly) a transition the table does not allow:
//   kConnecting      SSH hosts connecting, no worker started yet
//   kRunning         the workers of the current generation run
//   kWaitingForSlots an elastic job below --min-np waits (up to --elastic-timeout) for slots;
//                    the workers it has keep running
//   kRestarting      a restart was chosen: every worker got SIGTERM (grace timer running);
//                    once all ended the next generation starts (kRunning)
//   kTerminating     the job ends: every worker got SIGTERM (grace timer running)
//   kDraining        every worker ended; their output streams still give output
//   kFinished        done
#pragma once

namespace hvdrun::launcher {

enum class JobState {
  kConnecting,
  kRunning,
  kWaitingForSlots,
  kRestarting,
  kTerminating,
  kDraining,
  kFinished
};

const char* state_name(JobState state);

class JobStateMachine {
 public:
  JobState state() const noexcept { return state_; }
  // Whether the table allows `from` -> `to`.
  static bool allowed(JobState from, JobState to);
  // Moves to `next` if allowed and returns true; otherwise logs an error naming both states
  // (a refused transition is a bug of the caller) and returns false, the state unchanged.
  bool enter(JobState next);
  // Workers of the job run and it reacts to their ends and to changes of slots.
  bool active() const noexcept {
    return state_ == JobState::kRunning || state_ == JobState::kWaitingForSlots;
  }
  bool is(JobState state) const noexcept { return state_ == state; }

 private:
  JobState state_ = JobState::kConnecting;
};

}  // namespace hvdrun::launcher
