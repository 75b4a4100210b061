// RemoteSpawner (remote_spawn.h): one HostLink per host, and the id -> host table that
// routes terminate() calls. Used from one thread; the links do the blocking work.
#include "launcher/remote/remote_spawn.h"

#include <map>

#include "launcher/remote/host_link.h"
#include "launcher/ssh/ssh_log.h"

namespace hvdrun::launcher::ssh {

struct RemoteSpawner::Impl {
  RemoteSpawnOptions options;
  RemoteEvents events;
  std::map<int, std::size_t> worker_host;
  std::vector<std::unique_ptr<HostLink>> links;  // last: destroyed (joined) first
};

RemoteSpawner::RemoteSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options,
                             RemoteEvents events)
    : impl_(std::make_unique<Impl>()) {
  ssh_logger();  // created here, before the host threads log
  if (options.agent_path.empty()) options.agent_path = default_agent_path();
  impl_->options = std::move(options);
  impl_->events = std::move(events);
  const auto deadline = Clock::now() + impl_->options.start_timeout;
  impl_->links.reserve(hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    impl_->links.push_back(std::make_unique<HostLink>(i, std::move(hosts[i]), impl_->options,
                                                      deadline, impl_->events));
  }
}

std::size_t RemoteSpawner::add_host(RemoteHost host) {
  const std::size_t index = impl_->links.size();
  impl_->links.push_back(std::make_unique<HostLink>(index, std::move(host), impl_->options,
                                                    Clock::now() + impl_->options.start_timeout,
                                                    impl_->events));
  return index;
}

RemoteSpawner::~RemoteSpawner() {
  // Destroying a link joins its thread: stop them all first, so that they close in parallel.
  for (auto& link : impl_->links) link->request_stop();
  impl_->links.clear();
}

void RemoteSpawner::start_workers(std::size_t host, std::vector<RemoteWorker> workers) {
  if (host >= impl_->links.size()) return;
  for (const auto& worker : workers) impl_->worker_host[worker.id] = host;
  impl_->links[host]->start_workers(std::move(workers));
}

void RemoteSpawner::terminate(int id, int signo) {
  const auto it = impl_->worker_host.find(id);
  if (it != impl_->worker_host.end()) impl_->links[it->second]->terminate(id, signo);
}

void RemoteSpawner::terminate_all(int signo) {
  for (auto& link : impl_->links) link->terminate(-1, signo);
}

}  // namespace hvdrun::launcher::ssh
