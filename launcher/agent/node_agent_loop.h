// NodeAgent: the node agent's state and its poll loop (node_agent.h's run_node_agent), private
// to the agent library. node_agent.cpp holds the loop, the workers' output and the signals;
// node_agent_frames.cpp what the launcher's frames ask (spawn, signal, stacks, the job's end).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/agent/agent_outbox.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/agent/agent_stacks.h"
#include "launcher/agent/agent_worker.h"
#include "launcher/agent/node_agent.h"
#include "launcher/process/signal_sender.h"
#include "launcher/stacks/python_hook.h"

namespace hvdrun::launcher::agent {

struct Worker {
  std::uint32_t id = 0;
  pid_t pid = -1;  // also its process group
  UniqueFd out, err;
  std::optional<int> status;  // wait status once reaped
  std::chrono::steady_clock::time_point drain_deadline{};
  bool discard = false;     // SIGKILLed by the launcher: its output is not wanted
  bool terminated = false;  // it has its SIGTERM (sent here, or by the scheduler): never twice
  bool early_end = false;   // its Exit went out with output still to come
};

// Signals a worker's process group, or the worker alone for a forwarded warning
// (signals_group()); never anything else (a worker that never ran has none).
inline void signal_group(const Worker& w, int signo) {
  if (w.pid > 0) ::kill(signals_group(signo) ? -w.pid : w.pid, signo);
}
class NodeAgent {
 public:
  // Output still held open by a worker's children is relayed this long after its exit.
  static constexpr auto kDrainAfterExit = std::chrono::seconds(1);
  static constexpr std::size_t kReadChunk = 64u << 10;
  static constexpr std::size_t kRestBound = 1u << 20;  // taken from a held pipe after the drain
  static constexpr std::size_t kMaxCredit = 64u << 20;
  static constexpr int kBadLauncher = 2;

  NodeAgent(int in_fd, int out_fd, int err_fd, int sig_fd, sigset_t child_mask,
            const std::string& node);

  AgentEnd run();

 private:
  bool done() const;

  void note(const std::string& message);

  // The launcher is gone (EOF, a broken stream) or the agent was told to end: every worker is
  // signaled, then killed after the grace time.
  void begin_shutdown();

  bool reading_output() const { return credit_ > 0 && !shutting_down_; }

  void poll_once();

  // Reads up to `limit` bytes of a pipe into Output frames (within the credit, unless the
  // output is discarded); closes it at EOF.
  void relay(Worker& w, bool err, std::size_t limit);

  // After the drain time: what a held pipe still has (bounded, beyond the credit: the worker
  // is over), then it is closed.
  void take_rest(Worker& w);

  // A reaped worker's end goes out when its output is through; a failure goes out at once
  // when output still waits (the launcher must learn of it while its console is blocked),
  // followed by OutputClosed. Returns true once nothing more will be sent for it.
  bool advance(std::map<std::uint32_t, Worker>::iterator it);

  void on_launcher_input();

  // A worker that never ran: its message on its stderr, then its end (exit `code`).
  void never_ran(std::uint32_t id, const std::string& message, int code);

  // Forks the worker now; its exec is checked in finish_spawns(), once the frames at hand are.
  void handle(SpawnFrame& f);

  // Every running worker's stacks, collected in the background (agent_stacks.h); a request
  // while one is under way is answered at once with a note per worker.
  void handle(StacksRequestFrame&);

  // The job's status: what this agent exits with once the launcher closes its connection; or
  // that the launcher runs again (the agent then connects again, unless a signal ended it).
  void handle(JobEndFrame& f);

  // Not taken: the reason on stderr, a non-zero status, nothing more from this launcher.
  void handle(RefusedFrame& f);

  void send_stacks();

  // The workers forked from the frames at hand: each exec'd (Started) or not (127).
  void finish_spawns();

  void handle(SignalFrame& f);

  // A worker's SIGTERM, once: a scheduler's, the launcher's and this agent's are one.
  static void terminate(Worker& w);

  // SIGTERM to the agent is a scheduler's (a preemption, a time limit, a pod's end): the
  // workers get it once (from here, unless Slurm's step daemon sent it to all of them), and
  // they and the agent go on through their grace period: their output is relayed to the end,
  // their ends reported. The launcher ends the job (its grace period, then SIGKILL), or its
  // connection closes.
  void on_terminate(pid_t sender);

  void handle(CreditFrame& f) { credit_ = std::min(kMaxCredit, credit_ + f.bytes); }

  void on_signal();

  // The workers only: the tools that collect stacks are children too, and reaped by their own
  // runs (run_captured).
  void reap_workers();

  const int in_fd_, err_fd_, sig_fd_;
  const sigset_t child_mask_;
  Outbox outbox_;
  const std::string host_;
  const std::vector<std::string> base_env_;
  PythonHookDir hook_dir_;  // before stacks_, which reads it
  AgentStacks stacks_{hook_dir_.path()};
  FrameReader<ToAgent> frames_;
  std::map<std::uint32_t, Worker> workers_;
  std::map<pid_t, std::uint32_t> by_pid_;
  struct Forked {
    std::string program;  // argv[0], for the message if its exec fails
    Spawned spawned;
  };
  std::map<std::uint32_t, Forked> forking_;  // forked from the frames at hand, exec unchecked
  std::size_t credit_ = kInitialCredit;
  bool in_open_ = true;
  bool shutting_down_ = false;
  int exit_status_ = 0;
  bool again_ = false;            // the launcher runs again: connect again
  bool told_ = false;             // a JobEnd or Refused came
  int signal_ = 0;                // the signal that ended the agent
  bool terminate_noted_ = false;  // a SIGTERM came: said once
  std::chrono::steady_clock::time_point next_heartbeat_{};
  std::optional<std::chrono::steady_clock::time_point> kill_deadline_;
  std::optional<std::chrono::steady_clock::time_point> give_up_;
};

}  // namespace hvdrun::launcher::agent
