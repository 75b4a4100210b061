// `hvdrun --node-agent ...`: the node agent's entry point. Without --connect it speaks on its
// stdin and stdout (started over SSH). With --connect HOST:PORT (started by srun, or by the
// node itself) it connects to the launcher, retrying until --connect-timeout (default 60 s:
// the launcher may come up later), proves the job's secret (agent_auth.h) and then speaks on
// that connection. The secret comes from HVDRUN_AGENT_SECRET (removed from the environment
// its workers inherit) or --secret-file FILE, never from the command line. --node NAME (else
// SLURMD_NODENAME) is the name the launcher knows its host by. A launcher that ends a run with
// JobEnd's `again` runs again on the same port: the agent connects again (with a new
// --connect-timeout); SIGTERM, SIGINT or SIGHUP meanwhile end it.
#pragma once

#include <string>
#include <vector>

namespace hvdrun::launcher::agent {

inline constexpr const char* kAgentSecretVariable = "HVDRUN_AGENT_SECRET";

// `args`: what follows --node-agent. Returns main()'s exit status: the agent's, or 2 for bad
// arguments, 1 when the launcher could not be reached or refused; a one-line message on stderr.
int node_agent_main(const std::vector<std::string>& args);

}  // namespace hvdrun::launcher::agent
