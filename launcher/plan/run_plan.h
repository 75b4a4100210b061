// RunPlan: what one run of a job starts from beyond the user's request. The request (JobSpec)
// stays as it was parsed; the plan holds the hosts and the first generation's size once the
// discovery script, this machine's aliases and the preflight checks had their say, and what
// they found. run_job() makes it and passes it on explicitly: to the run, the job and its
// parts.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

struct RunPlan {
  std::vector<HostSpec> hosts;  // in order: a host's index is its place here
  int num_proc = 0;             // ranks of the first generation
  std::string alias_note;       // said at the start: aliases of this machine merged
  // After --preflight: each host's verdict ("ok" or the check it failed) and the checks' own
  // time, for --timeline; in an elastic job, the hosts that failed, which start in cooldown
  // (--blacklist-cooldown-range), as if a worker had failed there, and join when it ends.
  std::vector<std::pair<std::string, std::string>> preflight_results{};
  std::chrono::milliseconds preflight_took{0};
  std::vector<HostSpec> preflight_cooled{};
  // A per-node start's node 0 runs again after this run (the job after --preflight's probes):
  // the nodes' agents connect again.
  bool another_run = false;
};

// The plan of a run as `spec` asks it: its hosts and size.
inline RunPlan plan_as_asked(const JobSpec& spec) {
  RunPlan plan;
  plan.hosts = spec.hosts;
  plan.num_proc = spec.num_proc;
  return plan;
}

}  // namespace hvdrun::launcher
