// --dry-run: the plan of a job, printed instead of run: a table of its ranks (host, local,
// cross and node places, the GPU libhvdrun will pin), the program and whether it is found
// here, the rendezvous address, and the environment hvdrun gives the workers (what is the same
// for every rank, and which variables differ per rank). Nothing is started: no server, no
// worker, no connection to a host. The checks that need nothing started were made on the way
// here (host files, the discovery script's first run, the interfaces, the addresses); a
// program missing where a local rank would run it is the usual one-line error.
#pragma once

#include <map>
#include <ostream>
#include <string>

#include "launcher/job/job.h"

namespace hvdrun::launcher {

// Prints the plan on `out`; returns hvdrun's exit status (0). Throws UsageError for a program
// that cannot be run on this machine when a rank would run it here.
int print_dry_run(const JobSpec& spec, const JobStart& start,
                  const std::map<std::string, std::string>& environment, std::ostream& out);

}  // namespace hvdrun::launcher
