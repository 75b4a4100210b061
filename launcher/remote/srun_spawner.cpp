// SrunSpawner (srun_spawner.h): the agent port, the srun step, and a link per node waiting for
// its agent.
#include "launcher/remote/srun_spawner.h"

#include <netdb.h>
#include <signal.h>

#include <cstdio>
#include <regex>

#include "common/interfaces.h"
#include "hvdrun/error.h"
#include "launcher/agent/agent_connect.h"
#include "launcher/process/run_captured.h"
#include "launcher/remote/host_link.h"
#include "launcher/ssh/ssh_log.h"

namespace hvdrun::launcher::ssh {
namespace {

using namespace std::chrono_literals;

// The first IPv4 address of `name`, or empty.
std::string ipv4_of(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return {};
  char text[64] = {};
  ::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(found);
  return text;
}

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

SrunSpawner::SrunSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options,
                         RemoteEvents events, SrunOptions srun)
    : HostSpawner(std::move(options), std::move(events)) {
  std::vector<std::string> nodes;
  for (const auto& host : hosts) nodes.push_back(host.name);
  if (nodes.empty()) throw UsageError("--launcher slurm: no hosts");
  std::string address = srun.connect_address;
  if (address.empty()) {
    const std::string first = ipv4_of(nodes.front());
    address = first.empty() ? std::string() : route_source_address(first);
    if (address.empty()) {
      throw Error("--launcher slurm: no route from this machine to node '" + nodes.front() +
                  "' (cannot resolve it, or no IPv4 route): give --rendezvous-addr");
    }
  }
  listener_ = std::make_unique<AgentListener>(srun.bind, srun.secret, nodes);
  const Captured version = run_captured({srun.srun, "--version"}, srun.env, 10s);
  if (!version.end.success()) {
    throw Error("--launcher slurm: '" + srun.srun + " --version' failed (" +
                version.end.describe() + "): is Slurm's srun on the PATH?");
  }
  const bool external = srun_has_external_launcher(version.out);
  const auto argv = srun_agent_command(srun, external, nodes, this->options().agent_path,
                                       address + ":" + std::to_string(listener_->port()),
                                       this->options().start_timeout);
  std::vector<std::string> env = srun.env;
  env.push_back(std::string(agent::kAgentSecretVariable) + "=" + srun.secret);
  SpawnOptions spawn_options;
  spawn_options.capture_output = false;  // srun's own messages go to hvdrun's stderr
  ssh_logger()->info("starting the node agents: {}", shell_command_line(argv));
  Spawned spawned = spawn(argv, env, spawn_options);
  if (const int err = exec_error(spawned); err != 0) {
    throw Error("--launcher slurm: cannot run '" + srun.srun + "': " + std::strerror(err));
  }
  srun_ = std::move(spawned.child);
  const auto deadline = Clock::now() + this->options().start_timeout;
  for (const auto& node : nodes) {
    add_link(
        [this, node, deadline](SocketCanceller& canceller) {
          return listener_->wait_for(node, deadline, canceller);
        },
        deadline);
  }
  watcher_ = std::thread([this] { watch_srun(); });
}

// srun ending early (a bad flag, a node it cannot reach) fails every host still waiting.
void SrunSpawner::watch_srun() {
  while (!stop_) {
    if (auto end = srun_.try_reap()) {
      if (!stop_)
        listener_->fail_all("srun ended (" + end->describe() +
                            ") before the node agent of this host connected");
      return;
    }
    std::this_thread::sleep_for(100ms);
  }
}

SrunSpawner::~SrunSpawner() {
  close_links();  // the agents see their connections close and end, and the step with them
  stop_ = true;
  watcher_.join();
  const auto deadline = Clock::now() + 3s;
  while (!srun_.reaped() && Clock::now() < deadline) {
    if (srun_.try_reap()) break;
    std::this_thread::sleep_for(20ms);
  }
  if (!srun_.reaped()) {
    srun_.signal_group(SIGTERM);  // srun passes it on to the step's tasks
    for (int i = 0; i < 50 && !srun_.try_reap(); ++i) std::this_thread::sleep_for(20ms);
  }
  // Child's destructor SIGKILLs and reaps what is left.
}

std::size_t SrunSpawner::add_host(RemoteHost host) {
  const auto deadline = Clock::now();
  return add_link(
      [name = host.name](SocketCanceller&) -> AgentConnection {
        throw Error("host '" + name +
                    "' came from the discovery script: with --launcher slurm only the "
                    "allocation's nodes have agents");
      },
      deadline);
}

}  // namespace hvdrun::launcher::ssh
