// The job's worker pools and hosts (worker_pools.h).
#include "launcher/workers/worker_pools.h"

#include <signal.h>

#include "launcher/output/logging.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

WorkerPools::WorkerPools(boost::asio::io_context& io, const JobSpec& spec,
                         std::vector<HostSpec> hosts, Watchdog& watchdog, OutputSink& sink,
                         const std::map<std::string, std::string>& environment,
                         LocalHosts& local_hosts, PoolEvents& events)
    : io_(io),
      spec_(spec),
      sink_(sink),
      environment_(environment),
      local_hosts_(local_hosts),
      events_(events),
      hosts_(std::move(hosts)),
      rank_zero_stdin_(io, [this] { sink_.terminal_line_typed(); }),
      local_(io, watchdog, sink,
             {[this](const WorkerId& id, ProcessEnd end) {
                events_.worker_exited(id, std::move(end));
              },
              [this](const WorkerId& id) { events_.stream_closed(id); }},
             spec.command, spec.verbose, &rank_zero_stdin_),
      children_(io, SIGCHLD) {
  watch_children();
}

void WorkerPools::watch_children() {
  children_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec || closed_) return;
    local_.reap();
    if (!closed_) watch_children();  // a worker's end may have ended the job
  });
}

void WorkerPools::set_addresses(const AddressPlan& plan, const RendezvousInfo& rendezvous) {
  plan_ = plan;
  rdzv_ = rendezvous;
  interfaces_ = ipv4_interfaces();
}

RemoteWorkers::Callbacks WorkerPools::remote_callbacks() {
  return RemoteWorkers::Callbacks{
      [this](std::size_t host, remote::HostReady ready) {
        events_.host_ready(host, std::move(ready));
      },
      [this](std::size_t host, remote::HostFailed failed) { events_.host_failed(host, failed); },
      [this](const WorkerId& id, ProcessEnd end) { events_.worker_exited(id, std::move(end)); },
      [this](const WorkerId& id) { events_.stream_closed(id); },
      [this](const WorkerId& id, agent::StacksFrame stacks) {
        events_.remote_stacks(id, std::move(stacks));
      }};
}

void WorkerPools::connect(const std::vector<std::size_t>& remote) {
  std::vector<std::pair<std::size_t, HostSpec>> hosts;
  for (const std::size_t index : remote) hosts.emplace_back(index, hosts_[index]);
  remote_ = std::make_unique<RemoteWorkers>(
      io_, sink_, spec_, hosts, environment_,
      RemoteWorkers::Agents{rdzv_.secret, plan_.bind, plan_.fixed}, remote_callbacks());
}

WorkerPools::Discovered WorkerPools::add_discovered(std::size_t index, const HostSpec& host) {
  hosts_.push_back(host);  // index == hosts_.size() - 1: both grow only here
  if (local_hosts_.contains(host.name)) {
    if (!local_host_) {  // the job's hosts before this one, looked at once
      for (std::size_t other = 0; other + 1 < hosts_.size() && !local_host_; ++other) {
        if (local_hosts_.contains(hosts_[other].name)) local_host_ = other;
      }
    }
    if (local_host_ && *local_host_ != index) return Discovered::kThisMachineAgain;
    local_host_ = index;
    return Discovered::kUsable;
  }
  if (plan_.bind == "127.0.0.1") return Discovered::kLoopbackOnly;
  if (!remote_) connect({});
  remote_->add_host(index, host);
  return Discovered::kConnecting;
}

void WorkerPools::host_connected(std::size_t host, remote::HostReady ready) {
  host_addresses_.insert(ready.remote_addr);
  ready_.emplace(host, std::move(ready));
}

RendezvousInfo WorkerPools::rendezvous_for(std::size_t host, std::size_t rank0_host) const {
  RendezvousInfo info = rdzv_;
  const auto route = [&](std::size_t h) -> std::string {
    if (!plan_.fixed.empty()) return plan_.fixed;
    if (const auto it = ready_.find(h); it != ready_.end()) return it->second.local_addr;
    return ready_.empty() ? "127.0.0.1" : ready_.begin()->second.local_addr;
  };
  info.addr = route(host);
  // A remote host's agent picks its own interface (ssh/agent_worker.h).
  info.iface_by_agent = ready_.contains(host);
  if (info.iface_by_agent) info.stacks_dir.clear();  // this machine's directory
  if (!info.iface_by_agent) info.gloo_iface = interface_with_address(info.addr, interfaces_);
  const auto rank0_remote = ready_.find(rank0_host);
  info.master_addr = rank0_remote != ready_.end() ? rank0_remote->second.remote_addr : info.addr;
  return info;
}

void WorkerPools::start(std::vector<WorkerLaunch> launches) {
  std::vector<WorkerLaunch> local, remote;
  for (auto& launch : launches) {
    (&pool_of(launch.id.host) == &local_ ? local : remote).push_back(std::move(launch));
  }
  if (!remote.empty()) remote_->start(std::move(remote));
  local_.start(std::move(local));
}

std::vector<WorkerPool*> WorkerPools::pools() {
  std::vector<WorkerPool*> all{&local_};
  if (remote_) all.push_back(remote_.get());
  return all;
}

std::vector<const WorkerPool*> WorkerPools::pools() const {
  std::vector<const WorkerPool*> all{&local_};
  if (remote_) all.push_back(remote_.get());
  return all;
}

void WorkerPools::signal_all(int signo) {
  for (WorkerPool* pool : pools()) pool->signal_all(signo);
}

void WorkerPools::signal(const WorkerId& id, int signo) {
  pool_of(id.host).signal(id, signo);
}

bool WorkerPools::streams_open(const WorkerId& id) const {
  for (const WorkerPool* pool : pools()) {
    if (pool->streams_open(id)) return true;
  }
  return false;
}

std::size_t WorkerPools::open_streams() const {
  std::size_t open = 0;
  for (const WorkerPool* pool : pools()) open += pool->open_streams();
  return open;
}

void WorkerPools::close_streams() {
  for (WorkerPool* pool : pools()) {
    if (pool->open_streams() > 0) pool->close_streams();
  }
}

void WorkerPools::close_local_streams() {
  if (local_.open_streams() > 0) local_.close_streams();
}

void WorkerPools::close_remote_streams() {
  if (remote_) remote_->close_streams();
}

void WorkerPools::close() {
  closed_ = true;
  boost::system::error_code ignored;
  children_.clear(ignored);  // restores the default disposition
  children_.cancel(ignored);
  rank_zero_stdin_.close();
  for (WorkerPool* pool : pools()) pool->close();
}

}  // namespace hvdrun::launcher
