// SrunSpawner: the hosts of a Slurm allocation, each reached through a node agent that one
// srun step starts on every node (`--launcher slurm`): `srun --nodes=K --ntasks=K
// --ntasks-per-node=1 --nodelist=... --mpi=none --cpu-bind=none` with `--external-launcher`
// where Slurm has it (23.11 and later, probed once with `srun --version`) and `--overlap`
// before, `--kill-on-bad-exit=1` for a static job and `--no-kill --kill-on-bad-exit=0` for an
// elastic one (a lost node must not end the step). Each agent connects back to this
// launcher's agent port (agent_listener.h) with the job's secret, which srun passes in the
// environment (never argv). If srun ends before every agent connected, the hosts still
// waiting fail with srun's status. At the end the connections close, the agents end and with
// them the step; srun is waited for (bounded), then signaled.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "launcher/process/process.h"
#include "launcher/remote/agent_listener.h"
#include "launcher/remote/remote_spawn.h"

namespace hvdrun::launcher::ssh {

struct SrunOptions {
  std::string srun = "srun";
  std::string secret;            // the job's: the agents prove it
  std::string bind = "0.0.0.0";  // the agent port's address
  std::string connect_address;   // where the agents connect: this machine's address on the
                                 // route to the nodes (empty: the route to the first node)
  bool elastic = false;
  std::vector<std::string> env;  // srun's environment (the launcher's), "NAME=VALUE"
};

// "slurm 22.05.8" -> true when it is 23.11 or later (--external-launcher exists).
bool srun_has_external_launcher(const std::string& version_output);

// srun's argv for `nodes` (agent_path: hvdrun on the nodes).
std::vector<std::string> srun_agent_command(const SrunOptions& srun, bool external_launcher,
                                            const std::vector<std::string>& nodes,
                                            const std::string& agent_path,
                                            const std::string& endpoint,
                                            std::chrono::milliseconds connect_timeout);

class SrunSpawner final : public HostSpawner {
 public:
  // Starts the step at once. Throws hvdrun::Error when srun cannot be started or the agent port
  // cannot be opened.
  SrunSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options, RemoteEvents events,
              SrunOptions srun);
  ~SrunSpawner() override;
  // A host found by a discovery script has no agent in the step: it fails, saying so.
  std::size_t add_host(RemoteHost host) override;

 private:
  void watch_srun();

  std::unique_ptr<AgentListener> listener_;
  Child srun_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace hvdrun::launcher::ssh
