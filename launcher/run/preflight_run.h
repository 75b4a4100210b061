// hvdrun --preflight: before the job, one probe (hvdrun-preflight, beside hvdrun) runs on every
// slot of the job's hosts, as a job of its own through the same launch path (local processes,
// SSH or srun node agents), elastic so that a host that cannot be used leaves the others
// going; its report lines are read, not shown. Then the table on the console, and the job's
// hosts without those that failed: a static job fails naming the host and the check (or, with
// --preflight-exclude, runs on the others if they give -np slots); an elastic job starts
// without them (it fails if fewer than --min-np slots remain), and takes them in after a
// cooldown. --preflight-timeout bounds it all: half for the connections, half for the probes.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "launcher/preflight/preflight_verdict.h"
#include "launcher/run/run_job.h"

namespace hvdrun::launcher {

struct PreflightDecision {
  std::optional<RunPlan> plan;  // the job's run now; none: stop with `status`
  int status = 0;
};

PreflightDecision preflight_then(const JobSpec& spec, const RunPlan& plan,
                                 const std::map<std::string, std::string>& environment,
                                 Watchdog& watchdog, LocalHosts& local_hosts);

// The probes' job for a run of `spec` on `plan` (one probe per slot of every host it may use):
// a request of its own, and its run's plan. Exposed for the unit tests.
struct ProbeRun {
  JobSpec spec;
  RunPlan plan;
};
ProbeRun probe_run(const JobSpec& spec, const RunPlan& plan, const std::string& probe_program);

// The job's plan once `verdict` is known (without the hosts that failed, unless they join an
// elastic job later), or why it cannot run (`error` set).
std::optional<RunPlan> plan_after_preflight(const JobSpec& spec, const RunPlan& plan,
                                            const PreflightVerdict& verdict, std::string& error);

}  // namespace hvdrun::launcher
