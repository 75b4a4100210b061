// The node agent (`hvdrun --node-agent`): one per host, whatever started it (today an SSH
// channel; the protocol is agent_protocol.h). It spawns that host's workers as the launcher
// asks, each in its own process group with SIGKILL on the agent's death, relays their output
// within the launcher's credit, delivers signals, reports each start and end, sends a
// heartbeat, and takes every worker down (SIGTERM, kKillGrace, SIGKILL) when its connection to
// the launcher ends or it gets SIGHUP or SIGINT itself. SIGTERM (a scheduler's: preemption, a
// time limit, a pod's end) reaches each worker once (not again where Slurm's step daemon sent
// it to the workers too), and the agent goes on relaying their output and ends until the
// launcher ends the job or its connection closes; a later SIGTERM for a worker that has one
// (the launcher's) is not sent again.
//
// A worker whose working directory is missing, or whose program cannot be run, reports it on
// its own stderr and ends with exit code 2 or 127, as a shell would.
#pragma once

#include <string>

namespace hvdrun::launcher::agent {

struct AgentEnd {
  // For main(): the job's (JobEnd), 0, or 2 when the launcher sent a bad frame or refused it.
  int status = 0;
  bool again = false;  // the launcher runs again on its port: connect again (JobEnd's `again`)
  bool told = false;   // the launcher ended the run: a JobEnd or a Refused came
  int signal = 0;      // the signal that ended the agent, if one did
};

// Runs the agent on these descriptors (0, 1, 2 in `hvdrun --node-agent`) until the launcher is
// gone and every worker reaped. Blocks SIGCHLD, SIGTERM, SIGHUP and SIGINT (a signal that comes
// after the run stays pending) and ignores SIGPIPE in the calling process: call it from main()
// only. `node`: the name its Hello gives the launcher to know its host by (agent_protocol.h).
AgentEnd run_node_agent(int in_fd, int out_fd, int err_fd, const std::string& node = {});

}  // namespace hvdrun::launcher::agent
