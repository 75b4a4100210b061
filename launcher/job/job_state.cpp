// The job's state machine (job_state.h).
#include "launcher/job/job_state.h"

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

const char* state_name(JobState state) {
  switch (state) {
    case JobState::kConnecting:
      return "connecting";
    case JobState::kRunning:
      return "running";
    case JobState::kWaitingForSlots:
      return "waiting for slots";
    case JobState::kRestarting:
      return "restarting";
    case JobState::kTerminating:
      return "terminating";
    case JobState::kDraining:
      return "draining";
    case JobState::kFinished:
      return "finished";
  }
  return "?";
}

bool JobStateMachine::allowed(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kConnecting:
      return to == S::kRunning || to == S::kFinished;
    case S::kRunning:
      return to == S::kWaitingForSlots || to == S::kRestarting || to == S::kTerminating ||
             to == S::kDraining || to == S::kFinished;
    case S::kWaitingForSlots:
      return to == S::kRunning || to == S::kRestarting || to == S::kTerminating ||
             to == S::kFinished;
    case S::kRestarting:
      return to == S::kRunning || to == S::kTerminating || to == S::kFinished;
    case S::kTerminating:
      return to == S::kDraining || to == S::kFinished;
    case S::kDraining:
      return to == S::kFinished;
    case S::kFinished:
      return false;
  }
  return false;
}

bool JobStateMachine::enter(JobState next) {
  if (!allowed(state_, next)) {
    launcher_log()->error("internal: the job cannot go from {} to {}; it stays {}",
                          state_name(state_), state_name(next), state_name(state_));
    return false;
  }
  launcher_log()->debug("job {} -> {}", state_name(state_), state_name(next));
  state_ = next;
  return true;
}

}  // namespace hvdrun::launcher
