// The move of hvdrun into its Slurm allocation (slurm_relocation.h).
#include "launcher/slurm/slurm_relocation.h"

#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "hvdrun/error.h"
#include "launcher/output/logging.h"
#include "launcher/process/process.h"
#include "launcher/process/run_captured.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/remote/srun_step.h"
#include "launcher/slurm/moved_control.h"

namespace hvdrun::launcher {
namespace {

using namespace std::chrono_literals;

// The hosts' names or slot counts, comma-separated.
std::string joined(const std::vector<HostSpec>& hosts, bool slots) {
  std::string out;
  for (const auto& h : hosts) {
    out += (out.empty() ? "" : ",") + (slots ? std::to_string(h.slots) : h.name);
  }
  return out;
}

// Waits for srun, passing the signals hvdrun gets on to the moved hvdrun (moved_control.h);
// srun's end as hvdrun's exit status. While the moved hvdrun is not connected (before its first
// run, between --preflight's checks and the job), INT, TERM and HUP end the step through srun,
// at once; the others are said and dropped.
int wait_forwarding(Child& srun, ControlPort& control) {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGCHLD}) {
    sigaddset(&set, s);
  }
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &set, &old);
  for (;;) {
    if (auto end = srun.try_reap()) {
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      return end->shell_code();
    }
    timespec tick{0, 50'000'000};
    siginfo_t info{};
    const int signo = ::sigtimedwait(&set, &info, &tick);
    if (signo <= 0 || signo == SIGCHLD) continue;
    if (control.send(signo)) continue;
    if (signo == SIGINT || signo == SIGTERM || signo == SIGHUP) {
      note(signal_name(signo) +
           " while the moved hvdrun was not connected (starting, or between its checks and its "
           "job): ending its step through srun");
      srun.signal_process(SIGTERM);
    } else {
      note(signal_name(signo) +
           " while the moved hvdrun was not connected (starting, or between its checks and its "
           "job): not passed on");
    }
  }
}

}  // namespace

bool must_move_to_allocation(const JobSpec& spec, const std::map<std::string, std::string>& env,
                             LocalHosts& local_hosts) {
  if (spec.launcher != JobSpec::Launcher::kSlurm || spec.dry_run || spec.hosts.empty()) {
    return false;
  }
  if (env.contains(kSlurmMoved)) return false;
  // On a node of the job (a step, the batch script): SLURMD_NODENAME is set. Otherwise only the
  // first node is looked up: hvdrun on another node of the allocation moves to the first one
  // too, which is where it should run; one lookup, not one per node.
  if (env.contains("SLURMD_NODENAME")) return false;
  return !local_hosts.contains(spec.hosts.front().name);
}

std::vector<std::string> srun_move_command(const std::string& srun, bool external_launcher,
                                           const std::string& node, const std::string& hvdrun,
                                           const std::vector<std::string>& args) {
  std::vector<std::string> argv{srun,
                                "--nodes=1",
                                "--ntasks=1",
                                "--nodelist=" + node,
                                "--mpi=none",
                                "--cpu-bind=none",
                                "--job-name=hvdrun",
                                "--kill-on-bad-exit=1",
                                "--quiet",
                                external_launcher ? "--external-launcher" : "--overlap",
                                hvdrun};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int run_moved_to_allocation(const JobSpec& spec, const std::map<std::string, std::string>& env) {
  const std::string& first = spec.hosts.front().name;
  const auto allocation = slurm_allocation(env);  // as the hosts were read: it parsed
  std::vector<std::string> environment;
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  environment.push_back(std::string(kSlurmMoved) + "=1");
  environment.push_back(std::string(kSlurmMovedNodes) + "=" +
                        (allocation ? allocation->nodelist : joined(spec.hosts, false)));
  environment.push_back(std::string(kSlurmMovedTasks) + "=" + joined(spec.hosts, true));
  const Captured version = run_captured({"srun", "--version"}, environment, 10s);
  if (!version.end.success()) {
    throw Error("--launcher slurm: 'srun --version' failed (" + version.end.describe() +
                "): is Slurm's srun on the PATH?");
  }
  const std::string hvdrun =
      spec.remote_hvdrun.empty() ? remote::default_agent_path() : spec.remote_hvdrun;
  ControlPort control;
  environment.push_back(std::string(kSlurmControlPort) + "=" + std::to_string(control.port()));
  environment.push_back(std::string(kSlurmControlSecret) + "=" + control.secret());
  const auto argv = srun_move_command("srun", remote::srun_has_external_launcher(version.out),
                                      first, hvdrun, spec.launcher_args);
  note("this machine is not in Slurm job " + env.at("SLURM_JOB_ID") +
       "'s allocation: running the job from its first node, " + first);
  SpawnOptions options;
  options.capture_output = false;
  // srun passes its stdin to the moved hvdrun (rank 0's): a file or a pipe, not a terminal,
  // which srun, in a process group of its own, could not read from the background.
  options.stdin_fd = ::isatty(0) ? -1 : 0;
  Spawned spawned = spawn(argv, environment, options);
  if (const int err = exec_error(spawned); err != 0) {
    throw Error("--launcher slurm: cannot run 'srun': " + std::string(std::strerror(err)));
  }
  return wait_forwarding(spawned.child, control);
}

}  // namespace hvdrun::launcher
