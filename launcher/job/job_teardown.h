// JobTeardown: how a job's workers stop, and what ends a job from outside. The signals sent to
// hvdrun: one in --forward-signals goes to the ranks, Ctrl-\ shows their stacks, SIGINT, SIGTERM
// and SIGHUP interrupt the job (a second one from the terminal, or later than kRepeatWindow,
// means "now": SIGKILL). Stopping the workers: SIGTERM, then SIGKILL to those left when the
// grace period ends. The drain of their last output once every worker ended. A part of the job
// (job.h): it changes the job's lifecycle only through JobCore. io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>

#include "launcher/job/generation_log.h"
#include "launcher/job/job_control.h"
#include "launcher/job/job_core.h"
#include "launcher/job/worker_table.h"
#include "launcher/output/note_rate.h"
#include "launcher/process/signal_watch.h"
#include "launcher/spec/job_spec.h"
#include "launcher/stacks/stack_dumps.h"
#include "launcher/workers/pools.h"

namespace hvdrun::launcher {

// How long the output of ended workers may take to reach the console: a failed worker's last
// lines before the failure is announced, every worker's at the job's end.
inline constexpr std::chrono::seconds kDrainTimeout{1};

class JobTeardown {
 public:
  using Clock = std::chrono::steady_clock;

  // Every reference outlives this: they are the job's. `spares`: the warm spares running.
  JobTeardown(boost::asio::io_context& io, const JobSpec& spec, OutputSink& sink, Pools& pools,
              const WorkerTable& workers, const WorkerTable& spares, GenerationLog& generations,
              const StackDumps& dumps, JobCore& core, JobControl& control);
  JobTeardown(const JobTeardown&) = delete;
  JobTeardown& operator=(const JobTeardown&) = delete;

  // The job launched: the signals sent to hvdrun are its from now on.
  void watch_signals();
  // When the first signal that ends the job came (none: no signal).
  std::optional<Clock::time_point> interrupted_at() const noexcept { return interrupted_at_; }

  // kRestarting's and kTerminating's entry: SIGTERM to every worker (the spares were told to
  // go: not to them), SIGKILL to those of this generation left when the grace period ends.
  void stop_workers();
  // A new generation runs: a restart's grace period must not reach it.
  void cancel_grace() { grace_timer_.cancel(); }
  void kill_all(int signo);
  // kDraining's entry: every worker ended; their output has kDrainTimeout to come (see .cpp).
  void drain() { arm_drain_timer(); }
  // kFinished's entry: no timer left, the signals' notes said, the dispositions restored.
  void finish();

 private:
  void on_signal(const SignalEvent& signal);
  void interrupt(const SignalEvent& signal);
  void forward_signal(const SignalEvent& signal);
  bool repeated(const SignalEvent& signal) const;
  void arm_drain_timer();

  const JobSpec& spec_;
  OutputSink& sink_;
  Pools& pools_;
  const WorkerTable& workers_;
  const WorkerTable& spares_;
  GenerationLog& generations_;
  const StackDumps& dumps_;
  JobCore& core_;
  JobControl& control_;
  SignalWatch signals_;    // the signals sent to hvdrun, with their senders
  NoteRate signal_notes_;  // forwarded (or not) signals: a flood of them is not a flood of lines
  std::optional<SignalEvent> stop_signal_;  // the first signal that ends the job
  std::optional<Clock::time_point> interrupted_at_;
  bool sigkill_sent_ = false;
  boost::asio::steady_timer grace_timer_;
  boost::asio::steady_timer drain_timer_;
  Clock::duration remote_drain_waited_{};  // unpaused, in kDraining
};

}  // namespace hvdrun::launcher
