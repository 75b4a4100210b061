// AgentChannel: the launcher's end of one host's node agent (node_agent.h), over whatever
// carries its stream (agent_transport.h), whatever the number of workers. It writes the
// workers' Spawn and Signal frames, reads the agent's frames and turns them into RemoteEvents,
// grants output credit only while the console takes output (back-pressure reaches the
// workers on the host; the agent's ends and heartbeats still come), fails a worker that does
// not start in time, and takes the host as lost when the agent ends, goes silent, or breaks
// the protocol. Used on the link loop's thread only (link_loop.h).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/agent/agent_protocol.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/ssh/ssh_socket.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

class AgentTransport;

class AgentChannel {
 public:
  AgentChannel(AgentTransport& transport, const RemoteSpawnOptions& options,
               const RemoteEvents& events, Clock::time_point deadline,
               const std::function<bool()>& stopping);
  ~AgentChannel();
  AgentChannel(const AgentChannel&) = delete;
  AgentChannel& operator=(const AgentChannel&) = delete;

  void add(std::vector<RemoteWorker> workers);
  // `id` -1: every worker. Signals the agent does not deliver are sent as SIGTERM.
  void signal(int id, int signo);
  // Asks the agent for every running worker's stacks (on_stacks, one per worker).
  void request_stacks();
  // Tells the agent the job's exit status, which it then exits with, or (`again`) that the
  // launcher runs again on its port.
  void end_job(int status, bool again);
  // Steps until a pass changes nothing. Returns false once the host is lost (every worker then
  // has its end reported; failure() says why).
  bool advance(bool paused);
  int poll_timeout_ms(int keepalive_s) const;
  const std::string& failure() const { return failure_; }

 private:
  struct Entry {
    std::string label;
    Clock::time_point queued;
    bool started = false;
    bool reported_end = false;  // ended early: its output is still coming
  };

  void on_bytes(StreamKind stream, std::string_view bytes);
  void on_frame(agent::FromAgent& frame);
  void on_stderr_line(std::string_view line);
  void expire_unstarted();
  Clock::time_point start_deadline(const Entry& entry) const;
  bool fail_all(const std::string& message);
  bool alive() const { return !stopping_(); }

  AgentTransport& transport_;
  const RemoteSpawnOptions& options_;
  const RemoteEvents& events_;
  const Clock::time_point deadline_;
  const std::function<bool()>& stopping_;
  agent::AgentStreamReader reader_;
  std::string stderr_line_;
  std::map<int, Entry> entries_;
  std::size_t unacked_ = 0;  // output received since the last credit
  bool hello_ = false;
  Clock::time_point last_heard_;
  std::string error_;  // a protocol error seen while reading
  std::string failure_;
};

}  // namespace hvdrun::launcher::remote
