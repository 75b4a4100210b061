// The node agent (`hvdrun --node-agent`): one per host, whatever started it (today an SSH
// channel; the protocol is agent_protocol.h). It spawns that host's workers as the launcher
// asks, each in its own process group with SIGKILL on the agent's death, relays their output
// within the launcher's credit, delivers signals, reports each start and end, sends a
// heartbeat, and takes every worker down (SIGTERM, kKillGrace, SIGKILL) when its connection to
// the launcher ends or it gets SIGTERM, SIGHUP or SIGINT itself.
//
// A worker whose working directory is missing, or whose program cannot be run, reports it on
// its own stderr and ends with exit code 2 or 127, as a shell would.
#pragma once

#include <string>

namespace hvdrun::launcher::agent {

struct AgentEnd {
  int status = 0;      // for main(): the job's (JobEnd), 0, or 2 when the launcher sent a bad frame
  bool again = false;  // the launcher runs again on its port: connect again (JobEnd's `again`)
};

// Runs the agent on these descriptors (0, 1, 2 in `hvdrun --node-agent`) until the launcher is
// gone and every worker reaped. Blocks SIGCHLD, SIGTERM, SIGHUP and SIGINT (a signal that comes
// after the run stays pending) and ignores SIGPIPE in the calling process: call it from main()
// only. `node`: the name its Hello gives the launcher to know its host by (agent_protocol.h).
AgentEnd run_node_agent(int in_fd, int out_fd, int err_fd, const std::string& node = {});

}  // namespace hvdrun::launcher::agent
