// Runs a job to its end: the first hosts (a discovery script's), placement, the rendezvous
// faces, the job core (job.h) and its policy, all on one io_context; then the summary and the
// last output. Returns the launcher's exit status.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/plan/run_plan.h"
#include "launcher/process/watchdog.h"
#include "launcher/spec/job_spec.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

int run_job(const JobSpec& spec, const std::map<std::string, std::string>& environment);

// What a run of the job core gives besides its status (run_once): the lines that its workers'
// stdout marked with `capture_prefix` (not shown), and the hosts it could not use, with why.
struct RunHooks {
  std::string capture_prefix;
  std::function<void(std::string_view line)> capture;
  std::vector<std::pair<std::string, std::string>> unusable_hosts;  // filled by run_once
  bool interrupted = false;  // filled by run_once: a signal to hvdrun ended the run
  // The run's time limit (none: the job's own); `timed_out` filled by run_once.
  std::optional<std::chrono::milliseconds> limit;
  std::string limit_why;
  bool timed_out = false;
  // The run's own notes (its ranks, their ends, re-formations) are not said, unless --verbose:
  // the caller says what the run found.
  bool quiet = false;
};

// One run of the job core of `spec` on `plan`'s hosts, to its summary; returns its exit
// status. The watchdog stays armed.
int run_once(const JobSpec& spec, const RunPlan& plan,
             const std::map<std::string, std::string>& environment, Watchdog& watchdog,
             LocalHosts& local_hosts, RunHooks* hooks = nullptr);

}  // namespace hvdrun::launcher
