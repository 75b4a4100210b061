// The job's end (job_teardown.h): signals to hvdrun, stopping the workers (SIGTERM, grace
// period, SIGKILL), and the drain of their last output.
#include "launcher/job/job_teardown.h"

#include <signal.h>

#include <algorithm>

#include "common/duration_text.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

// How long remote ranks' output may still take once every worker ended, while it flows.
constexpr auto kRemoteDrainTimeout = std::chrono::seconds(30);
// A signal that ends the job, sent again by a process within this time, is the same signal
// (GNU timeout's two SIGTERMs come microseconds apart).
constexpr auto kRepeatWindow = std::chrono::milliseconds(100);

}  // namespace

JobTeardown::JobTeardown(boost::asio::io_context& io, const JobSpec& spec, OutputSink& sink,
                         Pools& pools, const WorkerTable& workers, const WorkerTable& spares,
                         GenerationLog& generations, const StackDumps& dumps, JobCore& core,
                         JobControl& control)
    : spec_(spec),
      sink_(sink),
      pools_(pools),
      workers_(workers),
      spares_(spares),
      generations_(generations),
      dumps_(dumps),
      core_(core),
      control_(control),
      signals_(io, {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}),
      grace_timer_(io),
      drain_timer_(io) {}

void JobTeardown::watch_signals() {
  signals_.start([this](const SignalEvent& signal) { on_signal(signal); });
}

// A second signal that ends the job means "now" (SIGKILL to every rank) only when it comes
// from the terminal or kRepeatWindow after the first: `timeout` and schedulers that signal
// both hvdrun and its process group deliver one SIGTERM twice at once.
bool JobTeardown::repeated(const SignalEvent& signal) const {
  return stop_signal_ && !signal.from_kernel() && signal.at - stop_signal_->at < kRepeatWindow;
}

void JobTeardown::on_signal(const SignalEvent& signal) {
  const JobStateMachine& state = core_.lifecycle();
  if (state.is(JobState::kFinished)) return;
  const int signo = signal.signo;
  const auto& forwarded = spec_.forward_signals;
  if (std::find(forwarded.begin(), forwarded.end(), signo) != forwarded.end()) {
    return forward_signal(signal);
  }
  if (signo == SIGUSR1 || signo == SIGUSR2) {
    signal_notes_.note(signal_name(signo) + " ignored",
                       signal.describe() + " ignored: not in --forward-signals");
    return;
  }
  if (signo == SIGQUIT) {  // Ctrl-\: every rank's stack, and the job goes on
    if (!state.is(JobState::kRunning)) {
      note(signal.describe() + ": no stacks now, no generation runs");
      return;
    }
    control_.collect_stacks(signal.describe(), dumps_.suspects().value_or(std::vector<int>{}),
                            nullptr);
    return;
  }
  if (repeated(signal)) {
    if (spec_.verbose) note(signal.describe() + " again at once: counted once");
    return;
  }
  interrupt(signal);
}

// SIGINT, SIGTERM or SIGHUP: the job ends (at once if it was ending already).
void JobTeardown::interrupt(const SignalEvent& signal) {
  const JobStateMachine& state = core_.lifecycle();
  const int signo = signal.signo;
  if (!interrupted_at_) interrupted_at_ = Clock::now();
  control_.happened(signal_name(signo), {{"from", signal.sender_text()}});
  if (!stop_signal_) stop_signal_ = signal;
  if (state.is(JobState::kDraining)) {  // every worker ended: only leftovers in their groups
    core_.fail(Outcome::interrupted(signo, signal.describe()), {});  // the generation has ended
    kill_all(SIGKILL);
    pools_.close_streams();  // take what they hold now, whatever the console does
    return;
  }
  if (state.is(JobState::kTerminating)) {
    if (!sigkill_sent_) note("second " + signal.describe() + ": killing every rank now");
    kill_all(SIGKILL);
    return;
  }
  core_.fail(Outcome::interrupted(signo, signal.describe()),
             "interrupted (" + signal_name(signo) + ")");
  if (state.is(JobState::kConnecting)) {
    note("interrupted (" + signal_name(signo) + ") while connecting to the hosts" +
         (signal.sender_text().empty() ? "" : "; sent by " + signal.sender_text()));
    core_.enter(JobState::kFinished);
    return;
  }
  if (state.is(JobState::kRestarting)) {
    generations_.current().end_reason += "; then " + signal_name(signo);
  }
  const std::size_t running = core_.running();
  std::string details;
  if (running > 0) details = ", grace period " + describe_duration(spec_.grace_period);
  if (const auto from = signal.sender_text(); !from.empty()) details += "; sent by " + from;
  note("interrupted (" + signal_name(signo) + "), terminating " + plural(running, "rank") +
       details);
  if (dumps_.suspects() && state.is(JobState::kRunning)) {  // the stall, before it goes
    control_.collect_stacks("interrupted during a stall", *dumps_.suspects(), [this] {
      if (!core_.lifecycle().is(JobState::kRunning)) return;  // a second signal meanwhile
      core_.terminate();
      core_.maybe_finish();
    });
    return;
  }
  core_.terminate();
  core_.maybe_finish();
}

// A signal in --forward-signals goes to every running worker, on every host; the job goes on.
void JobTeardown::forward_signal(const SignalEvent& signal) {
  const std::size_t ranks = core_.running();
  const JobStateMachine& state = core_.lifecycle();
  if (ranks == 0 || state.is(JobState::kTerminating) || state.is(JobState::kDraining)) {
    signal_notes_.note(signal_name(signal.signo) + " not forwarded",
                       signal.describe() + " not forwarded: no rank runs");
    return;
  }
  if (spares_.empty()) {
    pools_.signal_all(signal.signo);
  } else {  // not to the spares: they are in no generation, and may not handle it yet
    workers_.for_each([&](const WorkerRecord& r) {
      if (!r.end()) pools_.signal(r.id, signal.signo);
    });
  }
  control_.happened("forwarded " + signal_name(signal.signo), {{"from", signal.sender_text()}});
  signal_notes_.note("forwarded " + signal_name(signal.signo),
                     "forwarded " + signal.describe() + " to " + plural(ranks, "rank"));
}

// SIGTERM to every worker, SIGKILL to those left when the grace period ends. A SIGTERM that
// Slurm's step daemon sent (scancel, a time limit, a preemption) reached every process of
// hvdrun's step, this machine's workers too, and of the steps of srun's agents: they have it
// once, and the grace period is theirs to save. Workers on SSH hosts are in no step: they get
// it from hvdrun.
void JobTeardown::stop_workers() {
  if (stop_signal_ && stop_signal_->signo == SIGTERM && stop_signal_->from_step_daemon()) {
    const bool agents_have_it = spec_.launcher == JobSpec::Launcher::kSlurm;
    note(std::string("the scheduler signalled this machine's ranks") +
         (agents_have_it ? " and the nodes' itself" : " itself") + ": not sending SIGTERM again" +
         (agents_have_it ? "" : " but to the ranks on SSH hosts"));
    if (!agents_have_it) {
      workers_.for_each([&](const WorkerRecord& r) {
        if (!r.end() && pools_.connected(r.id.host)) pools_.signal(r.id, SIGTERM);
      });
    }
  } else if (spares_.empty()) {
    kill_all(SIGTERM);
  } else {  // the spares were told to go: a SIGTERM would only cut that short
    workers_.for_each([&](const WorkerRecord& r) {
      if (!r.end()) pools_.signal(r.id, SIGTERM);
    });
  }
  const std::size_t generation = generations_.count();
  grace_timer_.expires_after(spec_.grace_period);
  grace_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
    if (ec || core_.lifecycle().is(JobState::kFinished) || generation != generations_.count()) {
      return;
    }
    if (const std::size_t left = core_.running()) {
      note("grace period of " + describe_duration(spec_.grace_period) + " over: killing " +
           plural(left, "rank") + " with SIGKILL");
      core_.killed_after_grace(left);
    }
    kill_all(SIGKILL);
  });
}

void JobTeardown::kill_all(int signo) {
  if (signo == SIGKILL) sigkill_sent_ = true;
  pools_.signal_all(signo);
}

// kDraining: the local pipes get kDrainTimeout while the console takes output (an unread pipe
// is not a held one; after a signal, no more waiting for the console); a pipe still open then
// is held by a worker's leftover child. A remote worker's channel closes by itself once its
// output is through (its agent bounds the wait for leftovers), or with its SSH session; it
// gets kRemoteDrainTimeout while the console takes output (a host that stopped answering may
// take many minutes to be noticed), and after a signal it is not waited for either.
void JobTeardown::arm_drain_timer() {
  drain_timer_.expires_after(kDrainTimeout);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || core_.lifecycle().is(JobState::kFinished)) return;
    if (interrupted_at_) return pools_.close_streams();
    if (sink_.console().any_paused()) return arm_drain_timer();
    pools_.close_local_streams();
    if (pools_.open_remote_streams() == 0) return;
    remote_drain_waited_ += kDrainTimeout;
    if (remote_drain_waited_ < kRemoteDrainTimeout) return arm_drain_timer();
    pools_.close_remote_streams();
  });
}

void JobTeardown::finish() {
  grace_timer_.cancel();
  drain_timer_.cancel();
  signal_notes_.flush();
  signals_.close();
}

}  // namespace hvdrun::launcher
