// JobCore: the job's lifecycle as the job's own parts see it (its teardown, requests,
// rendezvous events, and its membership with the spares): the state and the outcome, the only moves that change them, and the policy's
// actions carried out. Parts never keep a copy of either. io thread only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "launcher/job/job_outcome.h"
#include "launcher/job/job_state.h"
#include "launcher/plan/worker_id.h"
#include "launcher/policy/policy.h"

namespace hvdrun::launcher {

class JobCore {
 public:
  virtual const JobStateMachine& lifecycle() const = 0;
  virtual const std::optional<Outcome>& outcome() const = 0;
  // Workers of the generation not ended yet (none before the first starts).
  virtual std::size_t running() const = 0;
  // The one way the job's outcome is set: the first failure (or interruption) is the job's,
  // and the current generation ends for `why` unless something else ended it; false (nothing
  // changed) once the job has an outcome.
  virtual bool fail(Outcome outcome, const std::string& why) = 0;
  // An interrupted job's ranks that were still running when the grace period ended.
  virtual void killed_after_grace(std::size_t ranks) = 0;
  // The one place the job's state changes, with each state's entry actions.
  virtual void enter(JobState next) = 0;
  // Every rank is told to stop (a running or restarting job ends); then whatever the job's
  // state now allows next (the drain, the end).
  virtual void terminate() = 0;
  virtual void maybe_finish() = 0;
  // What the policy is told with each event.
  virtual JobFacts facts() const = 0;
  // The one place a policy's action is carried out (for no worker's end).
  virtual void carry_out(const Action& action) = 0;
  // The first generation (or a restart's) starts: every worker of the table, then the spares.
  virtual void start_workers() = 0;
  // Workers of the table (new to it) start, told to the components.
  virtual void launch_workers(const std::vector<WorkerId>& ids) = 0;

 protected:
  ~JobCore() = default;
};

}  // namespace hvdrun::launcher
