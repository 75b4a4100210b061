// HostSpawner (remote_spawn.h): one HostLink per host, the pool their connects run on, the
// loop that serves them, and the id -> host table that routes terminate() calls;
// RemoteSpawner's links connect over SSH. Used from one thread.
#include "launcher/remote/remote_spawn.h"

#include "launcher/remote/agents_log.h"
#include "launcher/remote/connect_pool.h"
#include "launcher/remote/host_link.h"
#include "launcher/remote/link_loop.h"
#include "launcher/remote/ssh_agent_transport.h"
#include "launcher/ssh/ssh_log.h"
#include "launcher/ssh/ssh_session.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;
namespace {

// "10.213.0.11:22" -> "10.213.0.11"; "[fd00::1]:22" -> "fd00::1".
std::string address_without_port(const std::string& peer) {
  const auto colon = peer.rfind(':');
  std::string addr = colon == std::string::npos ? peer : peer.substr(0, colon);
  if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']')
    addr = addr.substr(1, addr.size() - 2);
  return addr;
}

// An SSH session to `host`, and on it the channel running its node agent.
AgentConnector ssh_connector(RemoteHost host, const RemoteSpawnOptions& options) {
  return [host = std::move(host), &options](ssh::SocketCanceller& canceller,
                                            Clock::time_point deadline) {
    const ssh::SshTarget target = ssh::resolve_target(host.user, host.name, options.ssh);
    ssh::SshSession session = ssh::SshSession::connect(target, options.ssh, deadline, &canceller);
    ssh::ssh_logger()->info("{} as {}: {}", session.where(), target.user,
                            ssh::describe_phases(session.phases()));
    if (!session.host_key_note().empty()) ssh::ssh_logger()->warn("{}", session.host_key_note());
    HostReady ready{
        0,           session.where(),  session.local_addr(),   address_without_port(session.peer()),
        target.user, session.phases(), session.host_key_note()};
    const std::string command = remote_agent_command(
        options.agent_path.empty() ? default_agent_path() : options.agent_path);
    return AgentConnection{
        std::make_unique<SshAgentTransport>(std::move(session), command, options.ssh.keepalive),
        std::move(ready)};
  };
}

}  // namespace

HostSpawner::HostSpawner(RemoteSpawnOptions options, RemoteEvents events)
    : options_(std::move(options)), events_(std::move(events)) {
  ssh::ssh_logger();  // created here, before the connect and loop threads log
  agents_logger();
  if (options_.agent_path.empty()) options_.agent_path = default_agent_path();
  loop_ = std::make_unique<LinkLoop>(options_, events_);
  connects_ = std::make_unique<ConnectPool>(kConnectThreads);
}

HostSpawner::~HostSpawner() {
  close_links();
}

void HostSpawner::close_links() {
  for (auto& link : links_) link->request_stop();  // a connect under way gives up
  connects_->finish();
  loop_->release_all();  // every connection closed
  links_.clear();
  connectors_.clear();
}

std::size_t HostSpawner::add_link(AgentConnector connect) {
  links_.push_back(
      std::make_unique<HostLink>(links_.size(), options_.start_timeout, events_, *loop_));
  connectors_.push_back(std::move(connect));
  HostLink* link = links_.back().get();
  connects_->post([link, connect = connectors_.back()] { link->connect(connect); });
  return links_.size() - 1;
}

std::size_t HostSpawner::reconnect(std::size_t host) {
  return add_link(connectors_.at(host));
}

void HostSpawner::start_workers(std::size_t host, std::vector<RemoteWorker> workers) {
  if (host >= links_.size()) return;
  for (const auto& worker : workers) worker_host_[worker.id] = host;
  links_[host]->start_workers(std::move(workers));
}

void HostSpawner::terminate(int id, int signo) {
  const auto it = worker_host_.find(id);
  if (it != worker_host_.end()) links_[it->second]->terminate(id, signo);
}

void HostSpawner::terminate_all(int signo) {
  for (auto& link : links_) link->terminate(-1, signo);
}

void HostSpawner::request_stacks() {
  for (auto& link : links_) link->request_stacks();
}

void HostSpawner::end_job(int status, bool again) {
  for (auto& link : links_) link->end_job(status, again);
}

RemoteSpawner::RemoteSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options,
                             RemoteEvents events)
    : HostSpawner(std::move(options), std::move(events)) {
  for (auto& host : hosts) add_link(ssh_connector(std::move(host), this->options()));
}

RemoteSpawner::~RemoteSpawner() {
  close_links();
}

std::size_t RemoteSpawner::add_host(RemoteHost host) {
  return add_link(ssh_connector(std::move(host), options()));
}

}  // namespace hvdrun::launcher::remote
