// Remote workers over SSH, for the launcher (workers/remote_workers.h): one SSH session per host,
// all hosts connected in parallel (one thread per host), and on it one channel running the
// host's node agent (`hvdrun --node-agent`, agent/node_agent.h), which starts every worker of
// the host from Spawn frames on its stdin (cwd, environment, argv: no secret is ever on a
// command line) and multiplexes their output and ends back (agent/agent_protocol.h).
//
// Use from one thread (the launcher's io_context thread):
//   1. RemoteSpawner spawner(hosts, options, events);   // connecting starts at once
//   2. on_host_ready(host) -> build the workers' environment with host.local_addr as the
//      rendezvous address, then spawner.start_workers(host.index, workers)
//   3. on_started / on_output / on_exit (/ on_output_closed) per worker id;
//      terminate(id, signal)
//   4. destroy the spawner: every session closes, every agent kills its workers' groups.
// Events are called on the host threads, concurrently: wrap each in boost::asio::post. After
// the destructor returns, no event runs; events stop once destruction begins. A host whose
// agent ends, goes silent or breaks the protocol is lost: each of its workers ends with
// kLostConnection (or kFailedToStart), all at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/process_end.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/agent/remote_exit.h"
#include "launcher/remote/agent_transport.h"
#include "launcher/ssh/config/ssh_options.h"
#include "launcher/ssh/ssh_error.h"
#include "launcher/ssh/ssh_socket.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

struct RemoteHost {
  std::string user;  // from user@host; empty: ~/.ssh/config User, else the local user
  std::string name;  // as written in -H or the host file
};

struct RemoteWorker {
  int id = 0;         // the launcher's number for this worker, unique in the job; events carry it
  std::string label;  // for messages: "rank 3"
  std::vector<std::string> argv;  // argv[0] is searched in the PATH of the environment
  std::vector<std::string> env;   // "NAME=VALUE": see remote_worker_environment()
  std::string cwd;                // the launcher's working directory
};

struct RemoteSpawnOptions {
  ssh::SshOptions ssh;
  std::string agent_path;  // hvdrun on the remote hosts; empty: default_agent_path()
  std::chrono::milliseconds start_timeout{30'000};  // connect + start every worker
  // No frame from a host's agent for this long (it sends a heartbeat every 2 s): host lost.
  std::chrono::milliseconds agent_silence{10'000};
  // Thread-safe; while it returns true, no worker output is read (the channels' windows
  // then stop the remote side: back-pressure). Empty: never paused.
  std::function<bool()> output_paused;
};

struct HostReady {
  std::size_t host = 0;     // index into the hosts given to the spawner
  std::string where;        // "hvdt-h1 (10.213.0.11:22)"
  std::string local_addr;   // this machine's address on the route to the host
  std::string remote_addr;  // the host's address as connected to ("10.213.0.11"), no port
  std::string user;         // the remote user
  std::vector<ssh::SshPhase> phases;
  std::string host_key_note;  // non-empty when known_hosts was changed or not checked
};

struct HostFailed {
  std::size_t host = 0;
  ssh::SshFailure failure = ssh::SshFailure::kUnreachable;
  std::string message;  // names the host and says what to do
};

// Exactly one of on_host_ready / on_host_failed per host. For each worker given to
// start_workers: on_started (if it started), on_output any number of times, then exactly one
// on_exit (exited, signaled, failed to start, or lost connection). A worker that failed (a
// non-zero status or a signal) while its output was still unread is reported as soon as the
// SSH server says so, with `output_open`: its output still follows, then on_output_closed.
// Otherwise on_exit comes once the output is through, and nothing follows it.
struct RemoteEvents {
  std::function<void(HostReady)> on_host_ready;
  std::function<void(HostFailed)> on_host_failed;
  std::function<void(int id)> on_started;
  std::function<void(int id, StreamKind stream, std::string bytes)> on_output;
  std::function<void(int id, ProcessEnd exit, bool output_open)> on_exit;
  std::function<void(int id)> on_output_closed;
  // A worker's stacks, as its host's agent collected them (request_stacks()).
  std::function<void(int id, agent::StacksFrame stacks)> on_stacks;
  // A host that was ready lost its agent (it ended, went silent, broke the protocol): after
  // its workers' ends, once. Nothing of that link is used again: reconnect() makes a new one.
  std::function<void(std::size_t host, std::string message)> on_host_lost;
};

// What connecting to a host's agent gives: its stream and the host's description (`host` is
// filled in by the link).
struct AgentConnection {
  std::unique_ptr<AgentTransport> transport;
  HostReady ready;
};
// Connects, blocking until done, `deadline` (the start timeout from when the connect began: a
// connect waiting for a thread of the pool does not spend it), or `canceller` is cancelled.
// Throws SshError (its failure kind is reported) or another hvdrun::Error (reported as
// unreachable).
using AgentConnector =
    std::function<AgentConnection(ssh::SocketCanceller& canceller, Clock::time_point deadline)>;

class ConnectPool;
class HostLink;
class LinkLoop;

// Hosts each reached through a HostLink, and the worker -> host table that routes signals.
// Links connect on a pool of at most kConnectThreads threads (an SSH handshake, or the wait for
// an agent's own connection, blocks one), then one LinkLoop thread serves them all. The kinds
// of hosts differ in how a link connects: RemoteSpawner (SSH) and SrunSpawner
// (srun_spawner.h).
class HostSpawner {
 public:
  static constexpr std::size_t kConnectThreads = 32;

  virtual ~HostSpawner();
  HostSpawner(const HostSpawner&) = delete;
  HostSpawner& operator=(const HostSpawner&) = delete;

  // Connects to one more host (an elastic job's discovered host); returns its index for the
  // events and start_workers().
  virtual std::size_t add_host(RemoteHost host) = 0;
  // A new link to the host of link `host` (whose agent was lost): a new SSH session, a new srun
  // step, or the wait for the node's next agent; returns its index. Its on_host_ready or
  // on_host_failed follows.
  virtual std::size_t reconnect(std::size_t host);
  // The agent of link `host` was lost (after on_host_lost): hosts whose agents come by
  // themselves take the node's next one from now on.
  virtual void lost(std::size_t /*host*/) {}
  // Starts workers on a host (after its on_host_ready; earlier calls are queued). A worker not
  // started by the start deadline fails to start.
  void start_workers(std::size_t host, std::vector<RemoteWorker> workers);
  // Delivers a signal to the worker's process group through its agent: SIGTERM, SIGKILL,
  // SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT; others are sent as SIGTERM. Unknown or
  // finished workers are ignored.
  void terminate(int id, int signo);
  void terminate_all(int signo);
  // Every host's agent collects its running workers' stacks (RemoteEvents::on_stacks).
  void request_stacks();
  // Every host's agent is told the job's exit status, which it then exits with; with `again`,
  // that this launcher runs again on its port (the agents then connect again).
  void end_job(int status, bool again);

 protected:
  HostSpawner(RemoteSpawnOptions options, RemoteEvents events);
  // Stops every link and waits until none connects or is served any more: call first in a
  // subclass destructor, before what its connectors use goes away.
  void close_links();
  // A new link, index links().size() - 1 after the call.
  std::size_t add_link(AgentConnector connect);
  const AgentConnector& connector(std::size_t link) const { return connectors_.at(link); }
  const RemoteSpawnOptions& options() const { return options_; }

 private:
  RemoteSpawnOptions options_;
  RemoteEvents events_;
  std::map<int, std::size_t> worker_host_;
  std::unique_ptr<LinkLoop> loop_;
  std::unique_ptr<ConnectPool> connects_;
  std::vector<std::unique_ptr<HostLink>> links_;
  std::vector<AgentConnector> connectors_;  // by link: how it connected
};

// Hosts reached over SSH: one session each, connected at once, in parallel.
class RemoteSpawner final : public HostSpawner {
 public:
  RemoteSpawner(std::vector<RemoteHost> hosts, RemoteSpawnOptions options, RemoteEvents events);
  ~RemoteSpawner() override;
  std::size_t add_host(RemoteHost host) override;
};

// This launcher's own executable (/proc/self/exe), the default agent path.
std::string default_agent_path();

// The remote command line: "'<agent path>' --node-agent" (quoted for the remote shell).
std::string remote_agent_command(const std::string& agent_path);

// Whether a launcher variable stays behind when a worker runs on another host: SSH_*,
// PWD, OLDPWD, HOSTNAME, BASH_FUNC_*, DISPLAY, SHLVL, _, and the login's identity and session
// (HOME, USER, LOGNAME, SHELL, MAIL, XDG_RUNTIME_DIR, XDG_SESSION_*, DBUS_SESSION_BUS_ADDRESS),
// which the remote login sets itself.
bool is_launcher_only_variable(std::string_view name);

// The worker environment (worker_environment()) minus launcher-only variables, except those
// named in `keep` (the -x names: an explicit forward wins).
std::vector<std::string> remote_worker_environment(const std::vector<std::string>& env,
                                                   const std::vector<std::string>& keep);

}  // namespace hvdrun::launcher::remote
