// NodeAgent (node_agent_loop.h): what the launcher's frames ask of the agent: spawn workers
// (their exec checked before the Started frames go out), signal them, collect their stacks,
// end the job or refuse it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hvdrun/error.h"
#include "launcher/agent/node_agent_loop.h"
#include "launcher/process/process.h"

namespace hvdrun::launcher::agent {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// A worker that never ran: its message on its stderr, then its end (exit `code`).
void NodeAgent::never_ran(std::uint32_t id, const std::string& message, int code) {
  outbox_.output(id, StreamKind::kStderr, message + "\n");
  outbox_.flush();  // the message first, its end after it where the stream takes both
  Worker w;         // no process (pid -1): nothing is ever signaled
  w.id = id;
  w.status = code << 8;  // as waitpid reports exit(code)
  w.drain_deadline = Clock::now();
  workers_.emplace(id, std::move(w));
}

// Forks the worker now; its exec is checked in finish_spawns(), once the frames at hand are.
void NodeAgent::handle(SpawnFrame& f) {
  if (shutting_down_) return;
  if (terminate_noted_) {  // no worker starts once the agent has its SIGTERM: it would miss it
    return never_ran(
        f.id, "hvdrun node agent on " + host_ + ": not started: the agent is ending (SIGTERM)",
        143);
  }
  if (workers_.contains(f.id) || forking_.contains(f.id)) {
    note("worker " + std::to_string(f.id) + " was already started; spawn ignored");
    return;
  }
  if (::chdir(f.spec.cwd.c_str()) != 0) {
    return never_ran(f.id,
                     "hvdrun node agent on " + host_ + ": cannot change to working directory '" +
                         f.spec.cwd + "': " + std::strerror(errno),
                     2);
  }
  try {
    forking_.emplace(
        f.id,
        Forked{f.spec.argv[0],
               begin_agent_worker(
                   f.spec,
                   overlay_environment(base_env_, with_python_hook(with_host_interfaces(f.spec.env),
                                                                   base_env_, hook_dir_.path())),
                   child_mask_)});
  } catch (const Error& e) {
    never_ran(f.id, std::string("hvdrun node agent on ") + host_ + ": " + e.what(), 2);
  }
}

// Every running worker's stacks, collected in the background (agent_stacks.h); a request
// while one is under way is answered at once with a note per worker.
void NodeAgent::handle(StacksRequestFrame&) {
  std::vector<std::pair<std::uint32_t, pid_t>> running;
  for (const auto& [id, w] : workers_) {
    if (!w.status && w.pid > 0) running.emplace_back(id, w.pid);
  }
  if (running.empty() || stacks_.start(running)) return;
  for (const auto& [id, pid] : running) {
    outbox_.control(StacksFrame{id, static_cast<std::int32_t>(pid), "", "",
                                "no stacks: a collection is under way on this host"});
  }
}

// The job's status: what this agent exits with once the launcher closes its connection; or
// that the launcher runs again (the agent then connects again, unless a signal ended it).
void NodeAgent::handle(JobEndFrame& f) {
  exit_status_ = f.status;
  again_ = f.again && !signal_;
  told_ = true;
}

// Not taken: the reason on stderr, a non-zero status, nothing more from this launcher.
void NodeAgent::handle(RefusedFrame& f) {
  write_all(err_fd_, "hvdrun node agent: the launcher refused this node: " + f.reason + "\n");
  exit_status_ = kBadLauncher;
  told_ = true;
  begin_shutdown();
}

void NodeAgent::send_stacks() {
  for (auto& frame : stacks_.take()) outbox_.control(std::move(frame));
}

// The workers forked from the frames at hand: each exec'd (Started) or not (127).
void NodeAgent::finish_spawns() {
  for (auto& [id, forked] : forking_) {
    AgentWorker started = finish_agent_worker(forked.spawned);
    if (started.exec_errno != 0) {
      int ignored = 0;
      while (::waitpid(started.pid, &ignored, 0) < 0 && errno == EINTR) {
      }
      never_ran(id, "cannot run '" + forked.program + "': " + std::strerror(started.exec_errno),
                127);
      continue;
    }
    set_nonblocking(started.out.get());
    set_nonblocking(started.err.get());
    Worker w;
    w.id = id;
    w.pid = started.pid;
    w.out = std::move(started.out);
    w.err = std::move(started.err);
    by_pid_[w.pid] = id;
    outbox_.control(StartedFrame{id, static_cast<std::int32_t>(w.pid)});
    workers_.emplace(id, std::move(w));
  }
  if (!forking_.empty()) reap_workers();  // one that ended before it was known
  forking_.clear();
}

void NodeAgent::handle(SignalFrame& f) {
  for (auto& [id, w] : workers_) {
    if (f.id != SignalFrame::kEveryWorker && static_cast<std::int32_t>(id) != f.id) continue;
    if (f.signo == SIGTERM) {
      terminate(w);
      continue;
    }
    if (!w.status) signal_group(w, f.signo);
    if (f.signo == SIGKILL) w.discard = true;  // the launcher wants it gone, output too
  }
}

// A worker's SIGTERM, once: a scheduler's, the launcher's and this agent's are one.
void NodeAgent::terminate(Worker& w) {
  if (!w.status && !w.terminated) signal_group(w, SIGTERM);
  w.terminated = true;
}

}  // namespace hvdrun::launcher::agent
