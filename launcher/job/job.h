// Job: the job core. Runs one job on the io_context from its launch to its summary: the
// lifecycle (JobStateMachine), teardown, signals and drain; the workers in one WorkerTable and
// the generations in one GenerationLog. It reports each event (a worker's end, a host lost,
// slots changed, Horovod workers asking to re-form) to the job's Policy and carries out the
// Action it gets back; elastic jobs keep their members in an ElasticMembership. The rendezvous
// faces are built first, in its constructor, and report to it through RendezvousEvents; the
// worker pools report through PoolEvents. Lives on run_job's stack around io_context::run();
// io thread only.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/discovery/discovery_poller.h"
#include "launcher/horovod/updates/host_updates.h"
#include "launcher/job/collective_groups.h"
#include "launcher/job/generation_log.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_outcome.h"
#include "launcher/job/job_state.h"
#include "launcher/job/spare_ledger.h"
#include "launcher/job/worker_table.h"
#include "launcher/output/note_rate.h"
#include "launcher/plan/elastic_membership.h"
#include "launcher/policy/policy.h"
#include "launcher/process/signal_watch.h"
#include "launcher/servers/rendezvous_faces.h"
#include "launcher/spec/local_host.h"
#include "launcher/stacks/stack_dumps.h"
#include "launcher/workers/worker_pools.h"

namespace hvdrun::launcher {

// How long the output of ended workers may take to reach the console: a failed worker's last
// lines before the failure is announced, every worker's at the job's end.
inline constexpr std::chrono::seconds kDrainTimeout{1};

// What the job starts from (run_job computes it).
struct JobStart {
  const JobSpec& spec;
  std::vector<Slot> slots;           // the first generation's
  std::vector<std::size_t> remote;   // remote hosts among spec.hosts
  AddressPlan plan;                  // addresses
  rdzv::ServerOptions server;        // hvdrun's rendezvous
  horovod::KvServerOptions horovod;  // Horovod's rendezvous
  std::string run_id;                // TORCHELASTIC_RUN_ID
  std::string alias_note;            // said at the start: aliases of this machine merged
  LocalHosts& local_hosts;           // which names are this machine, for discovered hosts
  JobComponents components;          // told of the job's events, in this order
};

class Job final : private RendezvousEvents, private PoolEvents, private JobControl {
 public:
  Job(boost::asio::io_context& io, JobStart start, Watchdog& watchdog, OutputSink& sink,
      const std::map<std::string, std::string>& environment);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Starts the job: connects to the remote hosts, or starts the workers at once.
  void launch();
  // When the first signal that ends the job came (none: no signal).
  std::optional<std::chrono::steady_clock::time_point> interrupted_at() const noexcept {
    return interrupted_at_;
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
    return unusable_hosts_;
  }
  std::uint16_t horovod_port() const noexcept { return faces_.horovod_port(); }

 private:
  using Clock = std::chrono::steady_clock;

  // RendezvousEvents
  void rendezvous_failed(const rdzv::JobError& error) override;
  void all_joined() override;
  void worker_lost(std::uint32_t key, const std::string& why) override;
  void horovod_in_use(const std::string& peer) override;
  bool horovod_reform_asked(std::size_t waiting) override;
  void horovod_registered(const std::string& name,
                          horovod::WorkerRegistration registration) override;
  bool is_job_host(const std::string& address) const override {
    return pools_.is_host_address(address);
  }
  // JobControl (its components' requests)
  bool generation_running() const override { return state_.is(JobState::kRunning); }
  std::uint32_t generation() const override { return faces_.generation(); }
  std::vector<rdzv::MemberProgress> progress() const override { return faces_.progress(); }
  bool straggler_found(std::uint32_t key, const std::string& verdict) override;
  void limit_reached(Limit limit, const std::string& reason) override;
  bool end_job(const std::string& why) override;
  void collect_stacks(const std::string& why, const std::vector<int>& culprits,
                      std::function<void()> then) override;
  void suspect(std::optional<std::vector<int>> ranks) override { dumps_.suspect(std::move(ranks)); }
  void happened(const std::string& what, const Args& args) override;
  // PoolEvents
  void host_ready(std::size_t host, remote::HostReady ready) override;
  void host_failed(std::size_t host, const remote::HostFailed& failed) override;
  void worker_exited(const WorkerId& id, ProcessEnd end) override;
  void stream_closed(const WorkerId& id) override;

  // job.cpp: the lifecycle.
  JobFacts facts() const;
  // Workers of the generation not ended yet (none before the first starts).
  std::size_t running() const;
  void start_workers();
  void launch_workers(const std::vector<WorkerId>& ids);
  void carry_out(const Action& action, WorkerRecord* ended);
  // The one way the job's outcome is set: the first failure (or interruption) is the job's,
  // and the current generation ends for `why` unless something else ended it; false (nothing
  // changed) once the job has an outcome.
  bool fail(Outcome outcome, const std::string& why);
  void fail_with(WorkerRecord& record);
  void fail_for(const std::string& reason);
  void announce_failure();
  void maybe_finish();
  void enter(JobState next);
  void terminate();
  // job_teardown.cpp: signals, stopping the workers, drain, the end.
  void wait_child();
  void on_signal(const SignalEvent& signal);
  void forward_signal(const SignalEvent& signal);
  bool repeated(const SignalEvent& signal) const;
  void stop_workers();
  void kill_all(int signo);
  void arm_drain_timer();
  void finish();
  // job_generations.cpp: restarts and re-formations.
  void restart(const WorkerRecord& failed);
  void restart_for(const std::string& reason);
  void start_next_generation();
  void drop_and_reform(WorkerId id);  // by value: its record goes
  void reform(rdzv::Handover how, const std::string& reason);
  void wait_for_slots(const std::string& reason);
  void watch_cooldowns();
  void slots_changed(SlotsChange change, const std::string& reason);
  void take_ranks(const std::vector<rdzv::Member>& members);
  std::map<std::string, Slot> named_survivors(const std::vector<rdzv::Member>& members);
  void name_spares(const std::vector<rdzv::Member>& members, const std::set<WorkerId>& promoted,
                   std::map<std::string, Slot>& survivors);
  // "generation 3: 4 workers, 1 of them new (1 a warm spare)"
  void note_generation(rdzv::Handover how, std::size_t size, std::size_t added,
                       std::size_t promoted);
  std::uint16_t start_generation(GenerationStart start);
  // job_progress.cpp: every second, the members' timed collectives told to the components,
  // then their tick; a straggler's host leaving the job; the ranks' stacks (stack_dumps.h).
  void watch_progress();
  void take_samples();
  void remote_stacks(const WorkerId& id, agent::StacksFrame stacks) override;
  // job_events.cpp: the job's events, told to its components.
  template <typename... Params, typename... Args>
  void publish(void (JobEvents::*event)(Params...), Args&&... args) {
    for (const auto& component : components_) (component.get()->*event)(args...);
  }
  WorkerEvent worker_event(const WorkerRecord& record) const;
  void publish_started(void (JobEvents::*event)(const std::vector<WorkerEvent>&),
                       const WorkerTable& table, const std::vector<WorkerId>& ids);
  void publish_generation_end();
  // job_spares.cpp: warm spares (--spares).
  // Starts spares on free slots until --spares wait (none once the job winds down).
  void refill_spares();
  // A spare's process ended: while the job runs, another starts (not after a few in a row).
  void spare_ended(WorkerRecord& spare);
  // The spares of a host that was lost go with it: dismissed, killed, never promoted.
  void drop_spares_of(std::size_t host);
  // A spare missed its heartbeats: killed; its end replaces it.
  void spare_lost(WorkerRecord& spare, const std::string& why);
  // The spare promoted by the next generation becomes one of its workers (a newcomer).
  void promote_spare(const WorkerId& id);
  // The job ends: every spare is told it is not needed (its init() throws NotMemberError).
  void dismiss_spares();
  // Horovod spares whose queries stopped (their heartbeats) are lost: killed and replaced.
  void check_horovod_spares();
  // job_hosts.cpp: hosts that connect, fail or are discovered.
  bool start_without_host(std::size_t host, const std::string& why);
  void kill_lost(std::uint32_t key, const std::string& why);
  void on_discovered_hosts(const std::vector<HostSpec>& hosts);
  void take_in(const ElasticMembership::HostsChange& change, const std::vector<HostSpec>& hosts);
  void add_preflight_failed_hosts();
  void cool_after_preflight(std::size_t host);
  void warn_if_stdin_not_read() const;

  const JobSpec& spec_;
  OutputSink& sink_;
  const std::map<std::string, std::string>& environment_;
  RendezvousFaces faces_;  // first: the workers' environment needs its ports
  std::unique_ptr<Policy> policy_;
  WorkerTable workers_;       // the current generation's
  WorkerTable spares_;        // warm spares running, in no generation (rank -1)
  SpareLedger spare_ledger_;  // their starts, promotions and ends, for the summary
  GenerationLog generations_;
  JobStateMachine state_;
  std::optional<ElasticMembership> membership_;       // elastic jobs only
  std::optional<horovod::HostUpdates> host_updates_;  // elastic jobs whose survivors re-form
  std::uint32_t next_key_ = 0;                        // HVDRUN_SLOT of the next worker started
  std::vector<std::size_t> remote_;                   // remote hosts at the start
  std::size_t failed_hosts_ = 0;  // of the remote hosts at the start (elastic jobs)
  std::vector<std::pair<std::string, std::string>> unusable_hosts_;  // host, why
  std::set<std::string> preflight_cooled_;  // failed preflight, not discovered yet: cool down
  std::optional<Outcome> outcome_;
  Clock::time_point launched_ = Clock::now();
  bool sigkill_sent_ = false;
  bool interrupted_ = false;
  std::optional<Clock::time_point> interrupted_at_;
  std::optional<SignalEvent> stop_signal_;  // the first signal that ends the job
  NoteRate signal_notes_;  // forwarded (or not) signals: a flood of them is not a flood of lines
  bool announce_pending_ = false;          // the first failure's note waits for that rank's pipes
  Clock::duration remote_drain_waited_{};  // unpaused, in kDraining
  boost::asio::signal_set children_;       // SIGCHLD
  SignalWatch signals_;                    // the signals sent to hvdrun, with their senders
  boost::asio::steady_timer grace_timer_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer announce_timer_;  // bounds the wait for a failed rank's last output
  boost::asio::steady_timer elastic_timer_;   // --elastic-timeout while below --min-np
  boost::asio::steady_timer cooldown_timer_;  // the next end of a host's cooldown
  boost::asio::steady_timer tick_timer_;      // every second: the members' collectives, the tick
  CollectiveGroups collective_groups_;        // the members' timed collectives, by collective
  JobComponents components_;                  // the timeline and others: told of every event
  StackDumps dumps_;                          // the ranks' stacks, on demand
  std::optional<DiscoveryPoller> discovery_;  // --host-discovery-script only
  WorkerPools pools_;                         // last: its events use the members above
};

}  // namespace hvdrun::launcher
