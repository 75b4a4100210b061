// SrunStep: the one srun step that starts a node agent on every node of a Slurm allocation:
// `srun --nodes=K --ntasks=K --ntasks-per-node=1 --nodelist=... --mpi=none --cpu-bind=none`
// with `--external-launcher` where Slurm has it (23.11 and later, probed once with `srun
// --version`) and `--overlap` before, `--kill-on-bad-exit=1` for a static job and `--no-kill
// --kill-on-bad-exit=0` for an elastic one (a lost node must not end the step). Each agent
// connects back to the launcher's agent port; the job's secret reaches it in srun's
// environment (never argv). A thread watches srun: if it ends first, `on_end` says how. At the
// end (once the agents' connections are closed and the agents end), srun is waited for
// (bounded), then signaled; or, once its agents are connected, detach() ends srun alone.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launcher/process/process.h"

namespace hvdrun::launcher::remote {

struct SrunOptions {
  std::string srun = "srun";
  bool elastic = false;
  std::vector<std::string> env;  // srun's environment (the launcher's), "NAME=VALUE"
  // Whether srun has --external-launcher; unknown: asked with `srun --version` (a later step
  // of the job reuses the first one's answer).
  std::optional<bool> external_launcher;
};

// "slurm 22.05.8" -> false; 23.11 and later -> true (--external-launcher exists).
bool srun_has_external_launcher(const std::string& version_output);

// srun's argv for `nodes` (agent_path: hvdrun on the nodes).
std::vector<std::string> srun_agent_command(const SrunOptions& srun, bool external_launcher,
                                            const std::vector<std::string>& nodes,
                                            const std::string& agent_path,
                                            const std::string& endpoint,
                                            std::chrono::milliseconds connect_timeout);

class SrunStep {
 public:
  // Starts the step. Throws hvdrun::Error when srun cannot be run.
  SrunStep(const SrunOptions& options, const std::vector<std::string>& nodes,
           const std::string& agent_path, const std::string& endpoint, const std::string& secret,
           std::chrono::milliseconds connect_timeout,
           std::function<void(const std::string&)> on_end);
  ~SrunStep();  // waits up to 3 s for srun, then SIGTERM (srun passes it on), then SIGKILL
  // Once every agent of the step connected: srun and its shepherd end (SIGKILL to their
  // process group), the step and its agents stay, for as long as the allocation. srun runs in
  // hvdrun's own step, which a scancel or a preemption signals whole, and srun answers SIGTERM
  // by killing its step's tasks at once: the agents and their workers, whose grace period is
  // then lost. Without srun, the agents get the scheduler's signal from their own step daemon
  // and keep their workers through the grace period; the step ends when its agents do.
  void detach();
  bool external_launcher() const noexcept { return external_launcher_; }
  SrunStep(const SrunStep&) = delete;
  SrunStep& operator=(const SrunStep&) = delete;

 private:
  void watch();

  Child srun_;
  bool external_launcher_ = false;
  std::function<void(const std::string&)> on_end_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;  // last
};

}  // namespace hvdrun::launcher::remote
