// Runs a job to its end: rendezvous server, watchdog, spawning, output multiplexing and
// the fail-fast policy, all on one io_context. Returns the launcher's exit status.
#pragma once

#include <map>
#include <string>

#include "launcher/job_spec.h"

namespace hvdrun::launcher {

int run_job(const JobSpec& spec, const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
