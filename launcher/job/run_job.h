// Runs a job to its end: the first hosts (a discovery script's), placement, the rendezvous
// faces, the job core (job.h) and its policy, all on one io_context; then the summary and the
// last output. Returns the launcher's exit status.
#pragma once

#include <map>
#include <string>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

int run_job(const JobSpec& spec, const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
