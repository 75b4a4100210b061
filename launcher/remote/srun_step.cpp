// SrunStep (srun_step.h): the srun command line, its start, and its end.
#include "launcher/remote/srun_step.h"

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <regex>

#include "hvdrun/error.h"
#include "launcher/agent/agent_connect.h"
#include "launcher/process/run_captured.h"
#include "launcher/remote/agents_log.h"

namespace hvdrun::launcher::remote {
namespace {

using namespace std::chrono_literals;

std::string join(const std::vector<std::string>& items, char sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(1, sep)) + item;
  return out;
}

}  // namespace

bool srun_has_external_launcher(const std::string& version_output) {
  static const std::regex version(R"(slurm(?:-wlm)?\s+(\d+)\.(\d+))");
  std::smatch m;
  if (!std::regex_search(version_output, m, version)) return false;
  const int major = std::stoi(m[1]), minor = std::stoi(m[2]);
  return major > 23 || (major == 23 && minor >= 11);
}

std::vector<std::string> srun_agent_command(const SrunOptions& srun, bool external_launcher,
                                            const std::vector<std::string>& nodes,
                                            const std::string& agent_path,
                                            const std::string& endpoint,
                                            std::chrono::milliseconds connect_timeout) {
  const std::string k = std::to_string(nodes.size());
  std::vector<std::string> argv{srun.srun,
                                "--nodes=" + k,
                                "--ntasks=" + k,
                                "--ntasks-per-node=1",
                                "--nodelist=" + join(nodes, ','),
                                "--mpi=none",
                                "--cpu-bind=none",
                                "--job-name=hvdrun-agents",
                                external_launcher ? "--external-launcher" : "--overlap"};
  if (srun.elastic) {
    argv.insert(argv.end(), {"--no-kill", "--kill-on-bad-exit=0"});
  } else {
    argv.emplace_back("--kill-on-bad-exit=1");
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f",
                static_cast<double>(connect_timeout.count()) / 1000);
  argv.insert(argv.end(),
              {agent_path, "--node-agent", "--connect", endpoint, "--connect-timeout", seconds});
  return argv;
}

SrunStep::SrunStep(const SrunOptions& options, const std::vector<std::string>& nodes,
                   const std::string& agent_path, const std::string& endpoint,
                   const std::string& secret, std::chrono::milliseconds connect_timeout,
                   std::function<void(const std::string&)> on_end)
    : on_end_(std::move(on_end)) {
  if (options.external_launcher) {
    external_launcher_ = *options.external_launcher;
  } else {
    const Captured version = run_captured({options.srun, "--version"}, options.env, 10s);
    if (!version.end.success()) {
      throw Error("--launcher slurm: '" + options.srun + " --version' failed (" +
                  version.end.describe() + "): is Slurm's srun on the PATH?");
    }
    external_launcher_ = srun_has_external_launcher(version.out);
  }
  const auto argv =
      srun_agent_command(options, external_launcher_, nodes, agent_path, endpoint, connect_timeout);
  std::vector<std::string> env = options.env;
  env.push_back(std::string(agent::kAgentSecretVariable) + "=" + secret);
  SpawnOptions spawn_options;
  spawn_options.capture_output = false;  // srun's own messages go to hvdrun's stderr
  agents_logger()->info("starting the node agents: {}", shell_command_line(argv));
  Spawned spawned = spawn(argv, env, spawn_options);
  if (const int err = exec_error(spawned); err != 0) {
    throw Error("--launcher slurm: cannot run '" + options.srun + "': " + std::strerror(err));
  }
  srun_ = std::move(spawned.child);
  watcher_ = std::thread([this] { watch(); });
}

// srun ending early (a bad flag, a node it cannot reach) is reported once.
void SrunStep::watch() {
  while (!stop_) {
    if (auto end = srun_.try_reap()) {
      if (!stop_) on_end_("srun ended (" + end->describe() + ")");
      return;
    }
    std::this_thread::sleep_for(100ms);
  }
}

void SrunStep::detach() {
  stop_ = true;  // its end is no news
  if (watcher_.joinable()) watcher_.join();
  if (srun_.reaped()) return;
  srun_.signal_group(SIGKILL);
  srun_.wait();
  agents_logger()->debug("srun let go of its step: the node agents run on by themselves");
}

SrunStep::~SrunStep() {
  stop_ = true;
  if (watcher_.joinable()) watcher_.join();
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!srun_.reaped() && std::chrono::steady_clock::now() < deadline) {
    if (srun_.try_reap()) break;
    std::this_thread::sleep_for(20ms);
  }
  if (!srun_.reaped()) {
    srun_.signal_group(SIGTERM);  // srun passes it on to the step's tasks
    for (int i = 0; i < 50 && !srun_.try_reap(); ++i) std::this_thread::sleep_for(20ms);
  }
  // Child's destructor SIGKILLs and reaps what is left.
}

}  // namespace hvdrun::launcher::remote
