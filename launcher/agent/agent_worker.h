// The node agent's worker process: started from a WorkerSpec in its own process group with
// a parent-death signal, stdin from /dev/null and stdout/stderr on pipes.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/process/process.h"

namespace hvdrun::launcher::agent {

struct AgentWorker {
  pid_t pid = -1;  // also its process group id
  UniqueFd out;
  UniqueFd err;
  int exec_errno = 0;  // non-zero: the exec failed with this errno (the child exits 127)
};

// `base` (the agent's environment, "NAME=VALUE") with `overlay` laid over it: an overlay entry
// replaces the base entry of the same name. Order: base order, then new overlay names.
std::vector<std::string> overlay_environment(const std::vector<std::string>& base,
                                             const std::vector<std::string>& overlay);

// `env` (the worker's, from the launcher) plus this host's HOROVOD_GLOO_IFACE and
// NCCL_SOCKET_IFNAME where the launcher left them to the host: the interface holding this
// host's address on the route to HOROVOD_GLOO_RENDEZVOUS_ADDR. Entries already in `env` (the
// user's -x) stay; nothing is added without a rendezvous address or a route.
std::vector<std::string> with_host_interfaces(std::vector<std::string> env);

// Forks and execs spec.argv with `env` in the current directory; the child gets `child_mask`
// as its signal mask and default dispositions. Does not wait for the exec, so that a host's
// workers fork back to back: finish_agent_worker() then waits (bounded, see exec_error in
// process.h) until it succeeded or failed.
// Throws hvdrun::Error naming the syscall if fork or a pipe fails.
Spawned begin_agent_worker(const WorkerSpec& spec, const std::vector<std::string>& env,
                           const sigset_t& child_mask);
AgentWorker finish_agent_worker(Spawned& spawned);

}  // namespace hvdrun::launcher::agent
