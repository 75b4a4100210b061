// The components a job is built with (job/job_events.h), in the order they are told of its
// events: the one list of what watches a job beside its core. A new capability of that kind
// is a new entry here, not new members of Job.
#pragma once

#include <chrono>

#include "launcher/job/job_events.h"
#include "launcher/plan/run_plan.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// The components `spec` asks for; times from `origin` (the job's start).
JobComponents job_components(const JobSpec& spec, const RunPlan& plan,
                             std::chrono::steady_clock::time_point origin);

}  // namespace hvdrun::launcher
