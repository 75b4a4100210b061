// Job: the job core. Runs one job on the io_context from its launch to its summary: the
// lifecycle (JobStateMachine, changed through JobCore); the workers in one WorkerTable and the
// generations in one GenerationLog. It reports each event (a worker's end, a host lost, slots
// changed, Horovod workers asking to re-form) to the job's Policy and carries out the Action it
// gets back. Its parts own the rest: the Membership (who the next generation's workers are:
// static or elastic, made by run/; it owns the warm spares), JobTeardown (signals, stopping the
// workers, the drain), JobPublisher (the components), JobRequests (what the components ask),
// JobRendezvous (what the rendezvous faces, built first, tell). The worker pools report to it
// through PoolEvents. Lives on run_job's stack around io_context::run(); io thread only.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/job/collective_groups.h"
#include "launcher/job/generation_log.h"
#include "launcher/job/host_start.h"
#include "launcher/job/job_core.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_outcome.h"
#include "launcher/job/job_parts.h"
#include "launcher/job/job_publisher.h"
#include "launcher/job/job_rendezvous.h"
#include "launcher/job/job_requests.h"
#include "launcher/job/job_state.h"
#include "launcher/job/job_teardown.h"
#include "launcher/job/membership.h"
#include "launcher/job/progress_sampler.h"
#include "launcher/job/spares.h"
#include "launcher/job/worker_table.h"
#include "launcher/plan/run_plan.h"
#include "launcher/policy/policy.h"
#include "launcher/process/watchdog.h"
#include "launcher/servers/rendezvous_faces.h"
#include "launcher/spec/local_host.h"
#include "launcher/workers/pools.h"

namespace hvdrun::launcher {

// What the job starts from (run_job computes it).
struct JobStart {
  const JobSpec& spec;
  const RunPlan& run;                // its hosts and size, the preflight's findings
  std::vector<Slot> slots;           // the first generation's
  std::vector<std::size_t> remote;   // remote hosts among run.hosts
  AddressPlan plan;                  // addresses
  rdzv::ServerOptions server;        // hvdrun's rendezvous
  horovod::KvServerOptions horovod;  // Horovod's rendezvous
  std::string run_id;                // TORCHELASTIC_RUN_ID
  LocalHosts& local_hosts;           // which names are this machine, for discovered hosts
  JobComponents components;          // told of the job's events, in this order
  // The pools that run the workers, reporting to the job (none: WorkerPools, this machine's
  // processes and the SSH hosts'; a test's fake ones).
  std::function<std::unique_ptr<Pools>(PoolEvents&)> pools;
  // Who the generations' workers are (members/make_membership.h), made from the job's parts;
  // required.
  std::function<std::unique_ptr<Membership>(const JobParts&)> membership;
};

class Job final : private PoolEvents, private JobCore {
 public:
  Job(boost::asio::io_context& io, JobStart start, Watchdog& watchdog, OutputSink& sink,
      const std::map<std::string, std::string>& environment);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Starts the job: connects to the remote hosts, or starts the workers at once.
  void launch();
  // When the first signal that ends the job came (none: no signal).
  std::optional<std::chrono::steady_clock::time_point> interrupted_at() const noexcept {
    return teardown_.interrupted_at();
  }
  // The outcome's status; 1 for a job that succeeded but whose output could not all be written.
  int exit_status() const;
  // The outcome's lines and the generations; then, once the console has written (or failed
  // to write) every line, incomplete_output() says whether output was lost in a job that
  // otherwise succeeded (a line for the user; empty if not).
  void print_summary() const;
  std::string incomplete_output() const;
  std::uint16_t rendezvous_port() const noexcept { return faces_.port(); }
  // The hosts that could not be used (their agent did not start), with why, in order.
  const std::vector<std::pair<std::string, std::string>>& unusable_hosts() const noexcept {
    return host_start_.unusable_hosts();
  }
  std::uint16_t horovod_port() const noexcept { return faces_.horovod_port(); }

 private:
  using Clock = std::chrono::steady_clock;

  // PoolEvents
  void host_ready(std::size_t host, remote::HostReady ready) override;
  void host_failed(std::size_t host, const remote::HostFailed& failed) override;
  void worker_exited(const WorkerId& id, ProcessEnd end) override;
  void stream_closed(const WorkerId& id) override;
  void remote_stacks(const WorkerId& id, agent::StacksFrame stacks) override {
    requests_.remote_stacks(id, std::move(stacks));
  }
  // JobCore (its parts' view of the lifecycle)
  const JobStateMachine& lifecycle() const override { return state_; }
  const std::optional<Outcome>& outcome() const override { return outcome_; }
  std::size_t running() const override;
  bool fail(Outcome outcome, const std::string& why) override;
  void killed_after_grace(std::size_t ranks) override;
  void enter(JobState next) override;
  void terminate() override;
  void maybe_finish() override;
  JobFacts facts() const override;
  void carry_out(const Action& action) override { carry_out(action, nullptr); }
  void start_workers() override;
  void launch_workers(const std::vector<WorkerId>& ids) override;

  // What the job's parts work with.
  JobParts parts();
  // job.cpp: the lifecycle. `ended`: the worker whose end the action answers (null: none).
  void carry_out(const Action& action, WorkerRecord* ended);
  void fail_with(WorkerRecord& record);
  void fail_for(const std::string& reason);
  void announce_failure();
  void finish();
  // job_generations.cpp: restarts (the membership makes the next generation).
  void restart(const WorkerRecord& failed);
  void restart_for(const std::string& reason);
  void start_next_generation();
  // job_hosts.cpp: hosts that connect or fail.
  void warn_if_stdin_not_read() const;

  // First, for its parts' references; destroyed first (~Job): its events use the members below.
  std::unique_ptr<Pools> pools_;
  const JobSpec& spec_;
  const RunPlan& run_;
  OutputSink& sink_;
  const std::map<std::string, std::string>& environment_;
  // What the faces tell (before them: they hold it; it uses the members below once the
  // io_context runs).
  JobRendezvous rendezvous_;
  RendezvousFaces faces_;  // early: the workers' environment needs its ports
  std::unique_ptr<Policy> policy_;
  WorkerTable workers_;  // the current generation's
  GenerationLog generations_;
  JobStateMachine state_;
  std::optional<Outcome> outcome_;
  HostStart host_start_;           // the remote hosts at the start: connected or left out
  bool announce_pending_ = false;  // the first failure's note waits for that rank's pipes
  boost::asio::steady_timer announce_timer_;  // bounds the wait for a failed rank's last output
  JobPublisher publisher_;                    // the components: told of every event
  JobRequests requests_;  // what the components and parts ask (JobControl); the ranks' stacks
  std::unique_ptr<Membership> membership_;  // who the next generation's workers are
  ProgressSampler progress_;                // every second: the collectives, the tick
  JobTeardown teardown_;                    // signals, stopping the workers, the drain
};

}  // namespace hvdrun::launcher
