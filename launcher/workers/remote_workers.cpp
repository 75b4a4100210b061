// RemoteWorkers (remote_workers.h): the RemoteSpawner's events, posted to the io thread, turned
// into output lines, --verbose phase lines and rank ends.
#include "launcher/workers/remote_workers.h"

#include <algorithm>
#include <filesystem>

#include "launcher/output/logging.h"
#include "launcher/remote/agent_port_spawner.h"

namespace hvdrun::launcher {

namespace asio = boost::asio;

ssh::SshOptions job_ssh_options(const JobSpec& spec,
                                const std::map<std::string, std::string>& environment) {
  auto options = ssh::ssh_options_from_environment(environment);
  options.port = spec.ssh_port;
  options.identity_file = spec.ssh_identity_file;
  if (const auto policy = ssh::parse_host_key_policy(spec.ssh_host_key_check)) {
    options.host_key_policy = *policy;
  }
  return options;
}

RemoteWorkers::RemoteWorkers(asio::io_context& io, OutputSink& sink, const JobSpec& spec,
                             const std::vector<std::pair<std::size_t, HostSpec>>& hosts,
                             const std::map<std::string, std::string>& environment,
                             const Agents& agents, Callbacks callbacks)
    : io_(io),
      sink_(sink),
      spec_(spec),
      callbacks_(std::move(callbacks)),
      cwd_(std::filesystem::current_path().string()) {
  for (const auto& forward : spec.env_forward) keep_.push_back(forward.name);
  std::vector<remote::RemoteHost> targets;
  targets.reserve(hosts.size());
  for (const auto& [index, host] : hosts) {
    link_of_[index] = hosts_.size();
    hosts_.push_back(index);
    names_[index] = host.name;
    targets.push_back({host.user, host.name});
  }
  remote::RemoteSpawnOptions options;
  options.ssh = job_ssh_options(spec, environment);
  options.agent_path = spec.remote_hvdrun;
  options.start_timeout = spec.start_timeout;
  options.output_paused = [&console = sink.console()] { return console.any_paused(); };
  if (spec.launcher != JobSpec::Launcher::kSsh) {
    remote::AgentPortOptions port;
    port.secret = agents.secret;
    port.bind = agents.bind;
    port.connect_address = agents.connect_address;
    std::optional<remote::SrunOptions> srun;
    if (spec.launcher == JobSpec::Launcher::kSlurm) {
      srun.emplace();
      srun->elastic = spec.elastic_job();
      for (const auto& [name, value] : environment) srun->env.push_back(name + "=" + value);
    } else {  // --nnodes: every node's agent comes to the endpoint's port by itself
      port.secret = spec.per_node.secret;
      port.port = spec.per_node.port;
      port.bind = "0.0.0.0";
    }
    spawner_ = std::make_unique<remote::AgentPortSpawner>(
        std::move(targets), std::move(options), posting_events(), std::move(port), std::move(srun));
  } else {
    spawner_ = std::make_unique<remote::RemoteSpawner>(std::move(targets), std::move(options),
                                                       posting_events());
  }
}

void RemoteWorkers::add_host(std::size_t index, const HostSpec& host) {
  if (closed_) return;
  link_of_[index] = hosts_.size();
  hosts_.push_back(index);
  names_[index] = host.name;
  spawner_->add_host({host.user, host.name});
}

RemoteWorkers::~RemoteWorkers() {
  close();
}

// Each event is copied onto the io thread; `closed_` drops those that arrive after close().
remote::RemoteEvents RemoteWorkers::posting_events() {
  remote::RemoteEvents events;
  events.on_host_ready = [this](remote::HostReady ready) {
    asio::post(io_, [this, ready = std::move(ready)]() mutable {
      if (closed_) return;
      const std::size_t host = hosts_[ready.host];
      if (!reconnects_.erase(ready.host)) return callbacks_.on_host_ready(host, std::move(ready));
      // A new agent for a host the job has: nothing new for the job, its workers start.
      if (spec_.verbose) note(names_[host] + ": a new node agent in place of the lost one");
    });
  };
  events.on_host_lost = [this](std::size_t link, std::string message) {
    asio::post(io_, [this, link, message = std::move(message)] {
      if (closed_ || link_of_[hosts_[link]] != link) return;
      lost_.insert(hosts_[link]);
      spawner_->lost(link);  // the node's next agent is taken (a restarted pod, say)
      if (spec_.verbose)
        note(names_[hosts_[link]] + ": " + message + "; a new agent when used again");
    });
  };
  events.on_host_failed = [this](remote::HostFailed failed) {
    asio::post(io_, [this, failed = std::move(failed)]() mutable {
      if (closed_) return;
      // A new agent that could not be had: the workers queued on it fail to start (the policy
      // decides, as for any failed start), and the host gets another new agent when it is used
      // again. The job was told of the host once, at its start: this is said, not reported.
      if (reconnects_.erase(failed.host)) {
        lost_.insert(hosts_[failed.host]);
        note("warning: no new node agent on " + names_[hosts_[failed.host]] + ": " +
             failed.message);
        return;
      }
      callbacks_.on_host_failed(hosts_[failed.host], std::move(failed));
    });
  };
  events.on_started = [this](int number) {
    asio::post(io_, [this, number] {
      if (!closed_) on_started(number);
    });
  };
  events.on_output = [this](int number, StreamKind stream, std::string bytes) {
    asio::post(io_, [this, number, stream, bytes = std::move(bytes)] {
      if (!closed_) on_output(number, stream, bytes);
    });
  };
  events.on_exit = [this](int number, ProcessEnd exit, bool output_open) {
    asio::post(io_, [this, number, exit = std::move(exit), output_open] {
      if (!closed_) on_exit(number, exit, output_open);
    });
  };
  events.on_output_closed = [this](int number) {
    asio::post(io_, [this, number] {
      if (!closed_) on_output_closed(number);
    });
  };
  events.on_stacks = [this](int number, agent::StacksFrame stacks) {
    asio::post(io_, [this, number, stacks = std::move(stacks)]() mutable {
      if (closed_) return;
      if (const auto it = running_.find(number); it != running_.end()) {
        callbacks_.on_stacks(it->second.id, std::move(stacks));
      }
    });
  };
  return events;
}

void RemoteWorkers::start(std::vector<WorkerLaunch> launches) {
  std::map<std::size_t, std::vector<WorkerLaunch>> by_host;
  for (auto& launch : launches) by_host[launch.id.host].push_back(std::move(launch));
  for (auto& [host, workers] : by_host) start_on(host, std::move(workers));
}

void RemoteWorkers::start_on(std::size_t host, std::vector<WorkerLaunch> workers) {
  if (closed_ || workers.empty()) return;
  std::size_t spawner_index = link_of_.at(host);
  if (lost_.erase(host)) {  // nothing of the lost agent's link is used again
    spawner_index = spawner_->reconnect(spawner_index);
    hosts_.push_back(host);
    link_of_[host] = spawner_index;
    reconnects_.insert(spawner_index);
  }
  std::vector<remote::RemoteWorker> remote;
  remote.reserve(workers.size());
  for (auto& worker : workers) {
    const int number = next_number_++;
    auto& running = running_[number];
    running.id = worker.id;
    running.host = host;
    running.link = spawner_index;
    remote.push_back({number, worker_label(worker.slot), spec_.command,
                      remote::remote_worker_environment(worker.env, keep_), cwd_});
  }
  starting_[host] = {workers.size(), 0, std::chrono::steady_clock::now()};
  spawner_->start_workers(spawner_index, std::move(remote));
}

void RemoteWorkers::on_started(int number) {
  const auto it = running_.find(number);
  if (it == running_.end()) return;
  const auto host = it->second.host;
  auto& progress = starting_[host];
  if (++progress.started == progress.workers && spec_.verbose) {
    note(names_[host] + ": started " + std::to_string(progress.workers) +
         (progress.workers == 1 ? " worker" : " workers") + " in " + millis_since(progress.since));
  }
}

void RemoteWorkers::on_output(int number, StreamKind stream, const std::string& bytes) {
  auto it = running_.find(number);
  if (it == running_.end()) return;
  sink_.write(it->second.id, stream, bytes);
}

void RemoteWorkers::on_exit(int number, const ProcessEnd& exit, bool output_open) {
  auto it = running_.find(number);
  if (it == running_.end() || it->second.ended) return;
  const WorkerId id = it->second.id;
  // Its agent was lost (the host's other workers end so too, and on_host_lost follows): the
  // host's next workers get a new agent, even if they start before on_host_lost comes.
  if (exit.kind == ProcessEnd::Kind::kLostConnection &&
      link_of_[it->second.host] == it->second.link) {
    lost_.insert(it->second.host);
  }
  if (output_open) {
    it->second.ended = true;
  } else {
    finish_output(it);
  }
  callbacks_.on_exit(id, exit);
}

void RemoteWorkers::on_output_closed(int number) {
  auto it = running_.find(number);
  if (it == running_.end()) return;
  const WorkerId id = it->second.id;
  finish_output(it);
  callbacks_.on_stream_closed(id);
}

void RemoteWorkers::finish_output(std::map<int, Running>::iterator it) {
  const WorkerId id = it->second.id;
  sink_.finish(id, StreamKind::kStdout);
  sink_.finish(id, StreamKind::kStderr);
  running_.erase(it);
}

bool RemoteWorkers::streams_open(const WorkerId& worker) const {
  return std::any_of(running_.begin(), running_.end(), [&](const auto& entry) {
    return entry.second.ended && entry.second.id == worker;
  });
}

std::size_t RemoteWorkers::open_streams() const {
  return static_cast<std::size_t>(std::count_if(
      running_.begin(), running_.end(), [](const auto& entry) { return entry.second.ended; }));
}

void RemoteWorkers::close_streams() {
  std::vector<int> ended;
  for (const auto& [number, running] : running_) {
    if (running.ended) ended.push_back(number);
  }
  if (ended.empty()) return;
  launcher_log()->warn("not waiting for the rest of the output of {} ended remote worker{}",
                       ended.size(), ended.size() == 1 ? "" : "s");
  for (const int number : ended) {  // reported as the local pipes are: from the io loop
    asio::post(io_, [this, number] {
      if (!closed_) on_output_closed(number);
    });
  }
}

void RemoteWorkers::signal_all(int signo) {
  if (!closed_) spawner_->terminate_all(signo);
}

void RemoteWorkers::signal(const WorkerId& worker, int signo) {
  if (closed_) return;
  for (const auto& [number, running] : running_) {
    if (running.id == worker) spawner_->terminate(number, signo);
  }
}

std::vector<WorkerId> RemoteWorkers::request_stacks() {
  std::vector<WorkerId> out;
  if (closed_) return out;
  for (const auto& [number, running] : running_) {
    if (!running.ended) out.push_back(running.id);
  }
  if (!out.empty()) spawner_->request_stacks();
  return out;
}

// Agents that connected to hvdrun exit non-zero unless told how the job ended: a per-node
// start's with the job's status; srun's with 0 (hvdrun reports the job's status itself, and
// srun would print a line for each agent's non-zero one).
void RemoteWorkers::end_job(int status, bool again) {
  if (closed_) return;
  if (spec_.launcher == JobSpec::Launcher::kNodes) spawner_->end_job(status, again);
  if (spec_.launcher == JobSpec::Launcher::kSlurm) spawner_->end_job(0, again);
}

void RemoteWorkers::close() {
  if (closed_) return;
  closed_ = true;
  spawner_.reset();
}

}  // namespace hvdrun::launcher
