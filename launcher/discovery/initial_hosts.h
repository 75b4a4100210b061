// The hosts an elastic job with a --host-discovery-script starts on: the script is run until
// its hosts give -np slots, every --discovery-interval, for at most --elastic-timeout. A failed
// first run ends the launch (later runs only warn: the job keeps its last good host set).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/process/watchdog.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// The script's hosts once they give at least spec.num_proc slots. Throws hvdrun::Error naming
// the script's failure or the slots it gave when the elastic timeout passed; throws
// Interrupted for a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that ended the wait.
std::vector<HostSpec> initial_hosts(const JobSpec& spec, Watchdog& watchdog,
                                    const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
