// run_job (supervisor.h): placement, watchdog, rendezvous server, local and remote workers and
// the fail-fast policy on one io_context. Reads JobSpec: hosts, num_proc, command,
// start_timeout, grace_period, output settings, verbose, log_level, rendezvous_addr.
#include "launcher/supervisor.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <optional>
#include <utility>

#include "common/interfaces.h"
#include "hvdrun/error.h"
#include "launcher/discovery_script.h"
#include "launcher/elastic_membership.h"
#include "launcher/failure_policy.h"
#include "launcher/horovod/host_updates.h"
#include "launcher/horovod/kv_server.h"
#include "launcher/initial_hosts.h"
#include "launcher/job_outcome.h"
#include "launcher/job_setup.h"
#include "launcher/local_host.h"
#include "launcher/local_workers.h"
#include "launcher/logging.h"
#include "launcher/open_files.h"
#include "launcher/placement.h"
#include "launcher/port_reservation.h"
#include "launcher/rank_zero_stdin.h"
#include "launcher/remote_workers.h"
#include "launcher/rendezvous_addr.h"
#include "launcher/watchdog.h"
#include "launcher/worker_env.h"
#include "rendezvous/auth.h"
#include "rendezvous/client.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

constexpr auto kDrainTimeout = std::chrono::seconds(1);
// How long remote ranks' output may still take once every worker ended, while it flows.
constexpr auto kRemoteDrainTimeout = std::chrono::seconds(30);
// How long an elastic Horovod rank 0's notification service has for each of its addresses,
// and how often a host change is sent again until the workers take it in.
constexpr auto kNotificationTimeout = std::chrono::seconds(5);
constexpr auto kNotificationResend = std::chrono::seconds(1);

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// The job's lifecycle. kConnecting: SSH hosts connecting, no worker yet. kRunning: workers of
// the current generation started. kRestarting: a worker failed and the failure policy chose a
// restart: SIGTERM sent to every worker of the generation, the grace timer runs, and when all
// have ended the next generation starts (kRunning again). kTerminating: SIGTERM sent to every
// worker, the grace timer runs. kDraining: every worker ended, their output streams still give
// output (arm_drain_timer() says how long). kFinished: done.
enum class JobState { kConnecting, kRunning, kRestarting, kTerminating, kDraining, kFinished };

const char* state_name(JobState state) {
  switch (state) {
    case JobState::kConnecting:
      return "connecting";
    case JobState::kRunning:
      return "running";
    case JobState::kRestarting:
      return "restarting";
    case JobState::kTerminating:
      return "terminating";
    case JobState::kDraining:
      return "draining";
    case JobState::kFinished:
      return "finished";
  }
  return "?";
}

// Owns the workers and every asynchronous operation of the job: an explicit state machine
// (JobState, changed only by enter()) with the failure policy behind FailurePolicy. Lives on
// the stack of run_job around io_context::run(); io thread only.
class Supervisor {
 public:
  // A new generation (a restart or an elastic re-formation): its members, how it takes over,
  // and why; `survivors`: each member that ran in the generation that ended, by its Horovod
  // name there ("<HOROVOD_HOSTNAME>:<HOROVOD_LOCAL_RANK>"), to its slot in this one.
  struct GenerationStart {
    std::vector<rdzv::Member> members;
    rdzv::Handover how = rdzv::Handover::kRestart;
    std::string reason;
    std::map<std::string, Slot> survivors;
  };
  // Called when a new generation starts: prepares the rendezvous for it and returns its
  // MASTER_PORT.
  using NextGeneration = std::function<std::uint16_t(GenerationStart start)>;

  Supervisor(asio::io_context& io, const JobSpec& spec, std::vector<Slot> slots, Watchdog& watchdog,
             OutputSink& sink, const std::map<std::string, std::string>& environment,
             std::function<void()> on_finished, NextGeneration next_generation)
      : io_(io),
        spec_(spec),
        hosts_(spec.hosts),
        sink_(sink),
        environment_(environment),
        on_finished_(std::move(on_finished)),
        next_generation_(std::move(next_generation)),
        signals_(io, SIGCHLD, SIGINT, SIGTERM),
        grace_timer_(io),
        drain_timer_(io),
        announce_timer_(io),
        elastic_timer_(io),
        cooldown_timer_(io),
        discovery_timer_(io),
        rank_zero_stdin_(io, [this] { sink_.terminal_line_typed(); }),
        local_(io, watchdog, sink,
               {[this](const WorkerId& id, ProcessEnd end) { on_worker_exit(id, std::move(end)); },
                [this](const WorkerId& id) { on_stream_closed(id); }},
               spec.command, spec.verbose, &rank_zero_stdin_) {
    for (const auto& slot : slots) {
      const auto key = static_cast<std::uint32_t>(slot.rank);
      sink_.add_worker(first_worker(slot), slot.rank);
      workers_.emplace(first_worker(slot), WorkerRecord{slot, std::nullopt, key, {}});
    }
    next_key_ = static_cast<std::uint32_t>(slots.size());
    if (spec.max_restarts > 0) policy_ = std::make_unique<RestartAllPolicy>(spec.max_restarts);
    if (spec.survivors_reform()) {
      policy_ = std::make_unique<ElasticPolicy>(spec.elastic.reset_limit);
    }
    if (spec.elastic_job()) {
      membership_.emplace(spec.hosts, *spec.elastic.max_np, spec.elastic.cooldown_min,
                          spec.elastic.cooldown_max);
      for (const auto& [id, record] : workers_) membership_->add(id, record.key, record.slot.rank);
      if (!spec.elastic.discovery_script.empty()) {
        discovery_.emplace(io, watchdog, spec.elastic, environment);
      }
      if (spec.survivors_reform()) {
        host_updates_.emplace(io, kNotificationTimeout, kNotificationResend,
                              [](const std::string& line) { note(line); });
      }
    }
    generations_.push_back({Clock::now(), {}, {}, slots.size(), {}});
    boost::system::error_code ignored;
    signals_.add(SIGHUP, ignored);  // a closed terminal or session: as SIGTERM
    signals_.add(SIGQUIT, ignored);
  }

  void launch(const AddressPlan& plan, const RendezvousInfo& rdzv,
              const std::vector<std::size_t>& remote);
  void fail_job(const rdzv::JobError& error);
  void all_joined();
  // The rendezvous heard nothing from worker `key` for too long: it is killed, and its end is
  // a failure like any other.
  void worker_lost(std::uint32_t key, const std::string& why);
  // A worker stored a key in Horovod's rendezvous (from `peer`): the job runs Horovod, whose
  // workers re-form after failures (they ask Horovod's rendezvous for their places) and learn
  // of host changes from their rank 0 (change_members()).
  void horovod_in_use(const std::string& peer);
  // Every Horovod worker (`waiting` of them) asked for its place in a next generation, though
  // none exited: after a host change they were told of, the next generation takes it in;
  // otherwise a collective failed (a Gloo timeout, a broken connection) and the same workers
  // re-form, as horovodrun's do. Returns whether it re-forms.
  bool horovod_reform_asked(std::size_t waiting);
  // The Horovod worker called `name` ("<HOROVOD_HOSTNAME>:<HOROVOD_LOCAL_RANK>") registered its
  // notification service: the running worker of that slot is told of host changes there.
  void horovod_registered(const std::string& name, horovod::WorkerRegistration registration);
  // Whether a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) ended the job.
  bool interrupted() const noexcept { return interrupted_; }
  // The outcome's status; 1 for a job that succeeded but whose output could not all be written.
  int exit_status() const {
    const int status = outcome_exit_status(outcome_);
    return status == 0 && !sink_.write_failed().empty() ? 1 : status;
  }
  void print_summary() const {
    print_outcome_summary(outcome_, sink_);
    if (!outcome_ && !sink_.write_failed().empty()) {
      note("job failed: the workers succeeded but their output is incomplete: cannot write " +
           sink_.write_failed());
    }
    print_generations();
  }

 private:
  void on_host_ready(std::size_t host, ssh::HostReady ready);
  void on_host_failed(std::size_t host, const ssh::HostFailed& failed);
  // An elastic job's host that cannot be reached at the start: its workers are left out and
  // the first generation is formed again from the others, if they reach --min-np. False if
  // they do not (the job fails as a static one does).
  bool start_without_host(std::size_t host, const std::string& why);
  // The workers that are `members` of the next generation take their slots (rank, topology)
  // there, also in their output's prefix.
  void take_ranks(const std::vector<rdzv::Member>& members);
  // Before take_ranks(): GenerationStart::survivors of the next generation's `members`.
  std::map<std::string, Slot> named_survivors(const std::vector<rdzv::Member>& members) const;
  RemoteWorkers::Callbacks remote_callbacks();
  void warn_if_stdin_not_read(const std::vector<std::size_t>& remote) const;
  void start_workers();
  // Starts the given workers of workers_ in their pools.
  void launch_workers(const std::vector<WorkerId>& ids);
  // Elastic jobs: the failed worker is dropped, its host cools down, the survivors re-form.
  void drop_and_reform(const WorkerId& id);
  // A new generation of membership_'s workers plus replacements on free slots, if at least
  // --min-np can take part; else the wait for slots (bounded by --elastic-timeout).
  void reform(rdzv::Handover how, const std::string& reason);
  void wait_for_slots(const std::string& reason);
  // At the next cooldown end: grow back towards --max-np (or end a wait for slots).
  void watch_cooldowns();
  // A new generation that takes in free slots (or ends a wait for slots); none once a
  // worker has finished.
  void grow(const std::string& reason);
  // A new generation for a change of the job's slots (`update`): fresh workers with
  // --max-restarts, else the survivors re-form (Horovod workers once rank 0 was told and they
  // all asked); none once the job is failing.
  void change_members(const std::string& reason, horovod::HostUpdate update);
  // The discovery script every --discovery-interval while the job runs.
  void poll_discovery();
  void on_discovery(DiscoveryResult result);
  // A host the discovery script printed for the first time: reachable at once if it is this
  // machine, after its SSH connection if remote.
  void add_discovered_host(std::size_t index, const HostSpec& host);
  // The pool that runs the workers of `host`: SSH once the host is connected, else this machine.
  WorkerPool& pool_of(std::size_t host) {
    if (ready_.contains(host)) return *remote_;
    return local_;
  }
  // Every pool that may hold workers.
  std::vector<WorkerPool*> pools() {
    std::vector<WorkerPool*> all{&local_};
    if (remote_) all.push_back(remote_.get());
    return all;
  }
  // Whether output of `id` may still come, whichever pool ran it.
  bool streams_open(const WorkerId& id) {
    for (const WorkerPool* pool : pools()) {
      if (pool->streams_open(id)) return true;
    }
    return false;
  }
  std::size_t open_streams() {
    std::size_t open = 0;
    for (const WorkerPool* pool : pools()) open += pool->open_streams();
    return open;
  }
  RendezvousInfo rendezvous_for(std::size_t host) const;
  void on_worker_exit(const WorkerId& id, ProcessEnd end);
  void on_stream_closed(const WorkerId& id);
  void announce_failure();
  // The failure policy chose to restart every worker after `failed` ended.
  void restart(const WorkerId& failed);
  // Elastic jobs with --max-restarts: a change of slots restarts every worker (not counted
  // as a restart) to take it in.
  void restart_for(const std::string& reason);
  // Some worker of the generation finished (exit 0): the job is ending, it does not grow.
  bool winding_down() const {
    return std::any_of(workers_.begin(), workers_.end(),
                       [](const auto& w) { return w.second.end && w.second.end->success(); });
  }
  // One line per generation when the job had more than one.
  void print_generations() const;
  void start_next_generation();
  // SIGTERM to every worker, SIGKILL to those left when the grace period ends.
  void stop_workers();
  void wait_signal();
  void on_signal(int signo);
  void arm_drain_timer();
  void terminate();
  void kill_all(int signo);
  std::size_t running() const {
    return state_ == JobState::kConnecting ? 0 : workers_.size() - ended_;
  }
  void maybe_finish();
  void enter(JobState next);
  void finish();

  // A worker of the job: its slot (rank and topology in this generation), how it ended, its
  // key (HVDRUN_SLOT) and, when the rendezvous lost it, why.
  struct WorkerRecord {
    Slot slot;
    std::optional<ProcessEnd> end;
    std::uint32_t key = 0;
    std::string lost;
    bool removed = false;  // its slot left the discovery output: not in the next generation
    // Horovod's name for it, "<host>:<local_rank>" of the slot it started in (what it registers
    // its notification service under), and whether it did.
    std::string horovod_name{};
    bool horovod_registered = false;
  };
  // "rank 2 (host h1, pid 4242)" (no pid for a worker that never ran).
  static std::string who(const WorkerRecord& record) {
    const ProcessEnd* end = record.end ? &*record.end : nullptr;
    return "rank " + std::to_string(record.slot.rank) + " (host " + record.slot.host +
           (end && end->pid ? ", pid " + std::to_string(end->pid) : "") + ")";
  }
  // One generation of the job, for the summary.
  struct GenerationRecord {
    Clock::time_point started;
    std::optional<Clock::time_point> formed;  // every rank joined the rendezvous
    std::optional<Clock::time_point> ended;
    std::size_t size = 0;
    std::string end_reason;
  };

  asio::io_context& io_;
  const JobSpec& spec_;
  std::vector<HostSpec> hosts_;  // the job's hosts by index: spec's, then discovered ones
  OutputSink& sink_;
  const std::map<std::string, std::string>& environment_;
  std::function<void()> on_finished_;
  NextGeneration next_generation_;
  asio::signal_set signals_;
  asio::steady_timer grace_timer_;
  asio::steady_timer drain_timer_;
  std::chrono::steady_clock::duration remote_drain_waited_{};  // unpaused, in kDraining
  asio::steady_timer announce_timer_;            // bounds the wait for a failed rank's last output
  asio::steady_timer elastic_timer_;             // --elastic-timeout while below --min-np
  asio::steady_timer cooldown_timer_;            // the next end of a host's cooldown
  asio::steady_timer discovery_timer_;           // the next run of the discovery script
  std::optional<ElasticMembership> membership_;  // elastic jobs only
  std::optional<DiscoveryScript> discovery_;     // --host-discovery-script only
  std::string discovery_failure_;                // the last run's failure; empty: it worked
  bool horovod_ = false;  // an elastic job of Horovod workers: host changes go by host_updates_
  std::optional<horovod::HostUpdates> host_updates_;  // elastic jobs whose survivors re-form
  bool waiting_for_slots_ = false;
  std::uint32_t next_key_ = 0;  // HVDRUN_SLOT of the next worker started
  AddressPlan plan_;
  RendezvousInfo rdzv_;                          // port, secret, master port; addresses per host
  std::map<std::size_t, ssh::HostReady> ready_;  // remote hosts connected so far
  std::vector<InterfaceAddress> interfaces_;     // this machine's, read once at launch
  std::size_t remote_count_ = 0;
  std::size_t failed_hosts_ = 0;              // of the remote hosts at the start (elastic jobs)
  std::map<WorkerId, WorkerRecord> workers_;  // the current generation's
  std::size_t ended_ = 0;
  std::vector<GenerationRecord> generations_;
  std::optional<Outcome> outcome_;
  Clock::time_point launched_ = Clock::now();
  JobState state_ = JobState::kConnecting;
  bool sigkill_sent_ = false;
  bool interrupted_ = false;
  bool announce_pending_ = false;  // the first failure's note waits for that rank's pipes
  std::unique_ptr<FailurePolicy> policy_ = std::make_unique<FailFastPolicy>();
  RankZeroStdin rank_zero_stdin_;
  LocalWorkers local_;
  std::unique_ptr<RemoteWorkers> remote_;  // last: its events use the members above
};

// hvdrun's stdin reaches only a rank 0 of this machine: a file given to a job whose rank 0 is
// remote would be lost without a word. (Not a pipe: `ssh head hvdrun ...` has one, unused.)
void Supervisor::warn_if_stdin_not_read(const std::vector<std::size_t>& remote) const {
  if (!rank_zero_stdin_.is_file()) return;
  for (const auto& [id, record] : workers_) {
    if (record.slot.rank != 0) continue;
    if (std::find(remote.begin(), remote.end(), record.slot.host_index) == remote.end()) return;
    note(
        "warning: hvdrun's stdin is not read: it reaches only a rank 0 on this machine, and "
        "rank 0 runs on host " +
        record.slot.host);
  }
}

void Supervisor::launch(const AddressPlan& plan, const RendezvousInfo& rdzv,
                        const std::vector<std::size_t>& remote) {
  plan_ = plan;
  rdzv_ = rdzv;
  interfaces_ = ipv4_interfaces();
  remote_count_ = remote.size();
  warn_if_stdin_not_read(remote);
  launched_ = Clock::now();
  generations_.front().started = launched_;
  wait_signal();
  if (remote.empty()) {
    start_workers();
    return;
  }
  std::vector<std::pair<std::size_t, HostSpec>> hosts;
  for (const std::size_t index : remote) hosts.emplace_back(index, hosts_[index]);
  remote_ =
      std::make_unique<RemoteWorkers>(io_, sink_, spec_, hosts, environment_, remote_callbacks());
}

RemoteWorkers::Callbacks Supervisor::remote_callbacks() {
  return RemoteWorkers::Callbacks{
      [this](std::size_t host, ssh::HostReady ready) { on_host_ready(host, std::move(ready)); },
      [this](std::size_t host, ssh::HostFailed failed) { on_host_failed(host, failed); },
      [this](const WorkerId& id, ProcessEnd end) { on_worker_exit(id, std::move(end)); },
      [this](const WorkerId& id) { on_stream_closed(id); }};
}

void Supervisor::on_host_ready(std::size_t host, ssh::HostReady ready) {
  const bool later = membership_ && (state_ == JobState::kRunning ||
                                     state_ == JobState::kRestarting);  // a discovered host
  if ((state_ != JobState::kConnecting && !later) || outcome_) return;
  if (spec_.verbose) {
    note(ready.where + " as " + ready.user + ": " + ssh::describe_phases(ready.phases) +
         " (route from " + ready.local_addr + ")");
    if (!ready.host_key_note.empty()) note(ready.host_key_note);
  }
  if (later) {  // usable from now on; a restart under way takes it in by itself
    ready_.emplace(host, std::move(ready));
    membership_->set_reachable(host, true);
    if (state_ == JobState::kRunning && membership_->free_slots(Clock::now()) > 0) {
      grow("host " + hosts_[host].name + " joined");
    }
    return;
  }
  ready_.emplace(host, std::move(ready));
  if (ready_.size() + failed_hosts_ == remote_count_) start_workers();
}

void Supervisor::on_host_failed(std::size_t host, const ssh::HostFailed& failed) {
  if (state_ == JobState::kFinished) return;
  if (state_ != JobState::kConnecting && membership_) {  // a discovered host: the job goes on
    note("warning: cannot use discovered host " + hosts_[host].name + ": " + failed.message);
    return;
  }
  if (state_ == JobState::kConnecting && membership_ && !outcome_ &&
      start_without_host(host, failed.message)) {
    if (ready_.size() + ++failed_hosts_ == remote_count_) start_workers();
    return;
  }
  if (!outcome_) {
    outcome_ =
        Outcome::failed(Outcome::Kind::kHostFailed, "cannot start the ranks of host " +
                                                        hosts_[host].name + ": " + failed.message);
  }
  if (state_ == JobState::kConnecting) enter(JobState::kFinished);  // nothing runs anywhere yet
}

bool Supervisor::start_without_host(std::size_t host, const std::string& why) {
  const auto on_host = [&](const auto& entry) { return entry.first.host == host; };
  const auto lost =
      static_cast<std::size_t>(std::count_if(workers_.begin(), workers_.end(), on_host));
  if (workers_.size() - lost < static_cast<std::size_t>(*spec_.elastic.min_np)) return false;
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!on_host(*it)) {
      ++it;
      continue;
    }
    membership_->remove(it->second.key);
    it = workers_.erase(it);
  }
  membership_->set_reachable(host, false);
  const std::string reason = "host " + hosts_[host].name + " cannot be used";
  note("warning: cannot use host " + hosts_[host].name + ": " + why +
       "; the job starts without its " + plural(lost, "slot"));
  auto members = membership_->next_generation();
  take_ranks(members);
  const std::size_t size = members.size();
  rdzv_.size = static_cast<int>(size);
  rdzv_.master_port = next_generation_({std::move(members), rdzv::Handover::kRestart, reason, {}});
  generations_.back().size = size;  // no worker ran in it yet: it is still the first
  return true;
}

void Supervisor::take_ranks(const std::vector<rdzv::Member>& members) {
  std::map<std::uint32_t, const Slot*> by_key;
  for (const auto& m : members) by_key[m.worker] = &m.slot;
  for (auto& [id, record] : workers_) {
    const auto it = by_key.find(record.key);
    if (it == by_key.end()) continue;
    record.slot = *it->second;
    sink_.set_rank(id, record.slot.rank);
  }
}

std::map<std::string, Slot> Supervisor::named_survivors(
    const std::vector<rdzv::Member>& members) const {
  std::map<std::uint32_t, const Slot*> ran;  // worker key -> slot in the generation that ended
  for (const auto& [id, record] : workers_) {
    if (!record.slot.host.empty()) ran[record.key] = &record.slot;  // not a newcomer
  }
  std::map<std::string, Slot> out;
  for (const auto& m : members) {
    const auto it = ran.find(m.worker);
    if (it == ran.end()) continue;
    out[it->second->host + ":" + std::to_string(it->second->local_rank)] = m.slot;
  }
  return out;
}

// Addresses for the workers of a host (see rendezvous_addr.h for the rule).
RendezvousInfo Supervisor::rendezvous_for(std::size_t host) const {
  RendezvousInfo info = rdzv_;
  const auto route = [&](std::size_t h) -> std::string {
    if (!plan_.fixed.empty()) return plan_.fixed;
    if (const auto it = ready_.find(h); it != ready_.end()) return it->second.local_addr;
    return ready_.empty() ? "127.0.0.1" : ready_.begin()->second.local_addr;
  };
  info.addr = route(host);
  // A remote host's agent picks its own interface (ssh/agent_worker.h).
  info.iface_by_agent = ready_.contains(host);
  if (!info.iface_by_agent) info.gloo_iface = interface_with_address(info.addr, interfaces_);
  std::size_t rank0_host = 0;
  for (const auto& [id, record] : workers_) {
    if (record.slot.rank == 0) rank0_host = id.host;
  }
  const auto rank0_remote = ready_.find(rank0_host);
  info.master_addr = rank0_remote != ready_.end() ? rank0_remote->second.remote_addr : info.addr;
  return info;
}

void Supervisor::start_workers() {
  enter(JobState::kRunning);
  std::vector<WorkerId> ids;
  for (const auto& [id, record] : workers_) ids.push_back(id);
  launch_workers(ids);
  if (discovery_ && generations_.size() == 1) poll_discovery();
}

void Supervisor::launch_workers(const std::vector<WorkerId>& ids) {
  std::map<WorkerPool*, std::vector<WorkerLaunch>> launches;
  for (const auto& id : ids) {
    auto& record = workers_.at(id);
    record.horovod_name = record.slot.host + ":" + std::to_string(record.slot.local_rank);
    launches[&pool_of(id.host)].push_back(
        {id, record.slot,
         worker_environment(environment_, spec_, record.slot, rendezvous_for(id.host),
                            record.key)});
  }
  // Remote hosts first: their SSH round trips overlap the local fork/exec.
  for (WorkerPool* pool : pools()) {
    if (pool != &local_ && launches.contains(pool)) pool->start(std::move(launches[pool]));
  }
  local_.start(std::move(launches[&local_]));
}

void Supervisor::on_worker_exit(const WorkerId& id, ProcessEnd end) {
  const auto it = workers_.find(id);
  if (it == workers_.end() || it->second.end) return;
  auto& record = it->second;
  record.end = std::move(end);
  ++ended_;
  if (host_updates_) host_updates_->forget(record.key);
  if (record.removed) {  // its slot left the job: however it ended, the job goes on
    note("rank " + std::to_string(record.slot.rank) + " (host " + record.slot.host +
         ") left the job with its slot: " + record.end->what_happened());
    workers_.erase(it);
    --ended_;
    // Horovod workers that were to take the removal in at a commit: the dead worker broke
    // their collectives, so they re-form now (as after a failure, without blame).
    if (horovod_ && host_updates_->pending() && state_ == JobState::kRunning && !outcome_) {
      reform(rdzv::Handover::kHostsUpdated, host_updates_->pending_reason());
    }
    maybe_finish();
    return;
  }
  // Ends after the generation was told to stop are expected, not failures.
  const auto decision = state_ == JobState::kRunning ? policy_->on_worker_end(id, *record.end)
                                                     : WorkerEndDecision::kContinue;
  if (decision == WorkerEndDecision::kRestartAll) {
    restart(id);
    maybe_finish();
    return;
  }
  if (membership_ && record.end->success()) membership_->remove(record.key);  // finished
  if (decision == WorkerEndDecision::kReform) {
    drop_and_reform(id);
    maybe_finish();
    return;
  }
  if (decision == WorkerEndDecision::kTerminateJob && !outcome_) {
    outcome_ = Outcome::worker_failed(id, record.slot, *record.end);
    outcome_->exhausted = policy_->exhausted();
    outcome_->after_others = policy_->survived() > 0;
    generations_.back().end_reason = who(record) + " " + record.end->what_happened();
    if (!streams_open(id)) {
      announce_failure();
    } else {  // its last lines come first, bounded like the final drain
      announce_pending_ = true;
      announce_timer_.expires_after(kDrainTimeout);
      announce_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && state_ != JobState::kFinished) announce_failure();
      });
    }
  }
  maybe_finish();
}

void Supervisor::on_stream_closed(const WorkerId& id) {
  if (announce_pending_ && outcome_ && id == outcome_->worker && !streams_open(id)) {
    announce_failure();
  }
  maybe_finish();
}

// The note about the first failed worker, then the teardown of the others.
void Supervisor::announce_failure() {
  announce_pending_ = false;
  announce_timer_.cancel();
  const auto& end = outcome_->end;
  const std::size_t others = state_ == JobState::kRunning ? running() : 0;
  note("rank " + std::to_string(outcome_->rank) + " (host " + outcome_->host +
       (end.pid ? ", pid " + std::to_string(end.pid) : "") + ") " + end.what_happened() +
       (outcome_->exhausted.empty() ? "" : " (" + outcome_->exhausted + ")") +
       (others ? "; terminating " + std::to_string(others) + " other " +
                     (others == 1 ? "rank" : "ranks")
               : ""));
  terminate();
  maybe_finish();
}

// The failure policy chose a restart: the generation ends, every worker is stopped, and
// maybe_finish() starts the next generation once all have ended. In an elastic job, a host
// that failed as a host (lost, unresponsive, could not start the worker) cools down first;
// a program that failed there does not make its host suspect.
void Supervisor::restart(const WorkerId& failed) {
  const WorkerRecord& record = workers_.at(failed);
  const ProcessEnd& end = *record.end;
  const std::string what = record.lost.empty() ? end.what_happened() : record.lost;
  generations_.back().end_reason = who(record) + " " + what;
  const auto* restarts = dynamic_cast<const RestartAllPolicy*>(policy_.get());
  const std::size_t others = running();
  std::string cooled;
  if (membership_ && (!record.lost.empty() || !end.ran())) {
    const auto cooldown = membership_->cool_down(failed.host, Clock::now());
    cooled = "; host " + hosts_[failed.host].name + " unused for " +
             std::to_string(cooldown.count()) + " s";
  }
  note(who(record) + " " + what + cooled + "; restarting every rank (restart " +
       std::to_string(restarts ? restarts->restarts() : 0) + " of " +
       std::to_string(spec_.max_restarts) + ")" +
       (others ? ": terminating " + plural(others, "other rank") : ""));
  enter(JobState::kRestarting);
}

void Supervisor::restart_for(const std::string& reason) {
  generations_.back().end_reason = reason;
  note(reason +
       ": restarting every rank to take the change in (not counted against "
       "--max-restarts); terminating " +
       plural(running(), "rank"));
  enter(JobState::kRestarting);
}

// Every worker of the generation has ended: the same slots start again as new incarnations,
// with a new rendezvous generation and MASTER_PORT. In an elastic job, the next generation
// takes every slot available now, up to --max-np (waiting for --min-np if need be).
void Supervisor::start_next_generation() {
  generations_.back().ended = Clock::now();
  const auto* restarts = dynamic_cast<const RestartAllPolicy*>(policy_.get());
  rdzv_.restart_count = restarts ? restarts->restarts() : static_cast<int>(generations_.size());
  if (membership_) {
    for (const auto& [id, record] : workers_) membership_->remove(record.key);
    workers_.clear();
    ended_ = 0;
    enter(JobState::kRunning);
    reform(rdzv::Handover::kRestart, generations_.back().end_reason);
    if (discovery_) poll_discovery();
    return;
  }
  std::map<WorkerId, WorkerRecord> next;
  std::vector<rdzv::Member> members;
  for (const auto& [id, record] : workers_) {
    const WorkerId incarnation{id.host, id.slot, id.incarnation + 1};
    sink_.add_worker(incarnation, record.slot.rank);
    // A fresh key: a late process of the old generation is no member of the new one.
    next.emplace(incarnation, WorkerRecord{record.slot, std::nullopt, next_key_, {}});
    members.push_back({next_key_++, record.slot});
  }
  workers_ = std::move(next);
  ended_ = 0;
  std::sort(members.begin(), members.end(),
            [](const rdzv::Member& a, const rdzv::Member& b) { return a.slot.rank < b.slot.rank; });
  const std::size_t size = members.size();
  rdzv_.master_port = next_generation_(
      {std::move(members), rdzv::Handover::kRestart, generations_.back().end_reason, {}});
  generations_.push_back({Clock::now(), {}, {}, size, {}});
  start_workers();
}

void Supervisor::drop_and_reform(const WorkerId& id) {
  auto& record = workers_.at(id);
  const std::string name = who(record);
  const std::string what = record.lost.empty() ? record.end->what_happened() : record.lost;
  const auto now = Clock::now();
  generations_.back().ended = now;
  generations_.back().end_reason = name + " " + what;
  membership_->remove(record.key);
  const auto cooldown = membership_->cool_down(id.host, now);
  workers_.erase(id);
  --ended_;
  note(name + " " + what + "; host " + hosts_[id.host].name + " unused for " +
       std::to_string(cooldown.count()) + " s; re-forming with " +
       plural(membership_->live(), "surviving worker"));
  reform(rdzv::Handover::kBroken, name + " " + what);
}

void Supervisor::reform(rdzv::Handover how, const std::string& reason) {
  if (state_ != JobState::kRunning) return;
  const auto now = Clock::now();
  const std::size_t possible = membership_->live() + membership_->free_slots(now);
  if (possible < static_cast<std::size_t>(*spec_.elastic.min_np)) {
    wait_for_slots(reason);
    return;
  }
  if (waiting_for_slots_) {
    waiting_for_slots_ = false;
    elastic_timer_.cancel();
  }
  // A job whose workers have begun to finish starts new ones only to keep its survivors at
  // --min-np (a newcomer gets their state): one beyond, or one with no survivor to learn
  // from, would run the training again.
  const std::size_t limit = !winding_down() ? std::numeric_limits<std::size_t>::max()
                            : membership_->live() > 0
                                ? static_cast<std::size_t>(*spec_.elastic.min_np)
                                : 0;
  std::vector<WorkerId> added;
  for (const auto& w : membership_->fill(now, limit)) {
    added.push_back(w.id);
    workers_.emplace(w.id, WorkerRecord{Slot{}, std::nullopt, w.key, {}});
  }
  next_key_ = membership_->next_key();
  auto members = membership_->next_generation();
  auto survivors = named_survivors(members);
  take_ranks(members);
  for (const auto& id : added) sink_.add_worker(id, workers_.at(id).slot.rank);
  const std::size_t size = members.size();
  if (!generations_.back().ended) {  // hosts updated: the running generation ends here
    generations_.back().ended = now;
    generations_.back().end_reason = reason;
  }
  rdzv_.size = static_cast<int>(size);
  rdzv_.master_port = next_generation_({std::move(members), how, reason, std::move(survivors)});
  if (host_updates_) host_updates_->reformed();  // this generation takes every change in
  generations_.push_back({now, {}, {}, size, {}});
  if (how == rdzv::Handover::kRestart) {
    note("generation " + std::to_string(generations_.size() - 1) + ": " + plural(size, "worker") +
         " on the slots available");
  } else if (!added.empty()) {
    note("generation " + std::to_string(generations_.size() - 1) + ": " + plural(size, "worker") +
         ", " + std::to_string(added.size()) + " of them new");
  }
  launch_workers(added);
  watch_cooldowns();
}

void Supervisor::wait_for_slots(const std::string& reason) {
  watch_cooldowns();
  if (waiting_for_slots_) return;
  waiting_for_slots_ = true;
  const auto timeout = spec_.elastic.timeout;
  const std::size_t free = membership_->free_slots(Clock::now());
  note("below --min-np " + std::to_string(*spec_.elastic.min_np) + ": " +
       plural(membership_->live(), "worker") + " left and " +
       (free == 0 ? std::string("no free slot") : plural(free, "free slot")) + "; waiting up to " +
       std::to_string(timeout.count()) + " s (--elastic-timeout) for slots");
  elastic_timer_.expires_after(timeout);
  elastic_timer_.async_wait([this, timeout, reason](const boost::system::error_code& ec) {
    if (ec || !waiting_for_slots_ || state_ != JobState::kRunning) return;
    if (!outcome_) {
      std::string text = "only " + plural(membership_->live(), "worker") + " for " +
                         std::to_string(timeout.count()) +
                         " s (--elastic-timeout), below --min-np " +
                         std::to_string(*spec_.elastic.min_np) + " (after " + reason + ")";
      generations_.back().end_reason = text;
      outcome_ = Outcome::failed(Outcome::Kind::kJobError, std::move(text));
      const std::size_t left = running();
      note("job failed: " + outcome_->message +
           (left ? "; terminating " + plural(left, "rank") : std::string()));
    }
    terminate();
    maybe_finish();
  });
}

void Supervisor::watch_cooldowns() {
  const auto now = Clock::now();
  const auto end = membership_->next_cooldown_end(now);
  if (!end || membership_->live() >= static_cast<std::size_t>(*spec_.elastic.max_np)) return;
  cooldown_timer_.expires_at(*end);
  cooldown_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_ != JobState::kRunning) return;
    if (membership_->free_slots(Clock::now()) == 0) return watch_cooldowns();
    grow("slots free again after a cooldown");
  });
}

void Supervisor::grow(const std::string& reason) {
  // A job whose workers have begun to finish does not take new ones, unless it waits for
  // slots to go on at all.
  if (winding_down() && !waiting_for_slots_) return;
  change_members(reason, horovod::HostUpdate::kAdded);
}

void Supervisor::change_members(const std::string& reason, horovod::HostUpdate update) {
  if (outcome_) return;  // the job is failing: no new generation
  // Horovod workers take a change in when rank 0 is told of it: they then ask for their
  // places, and horovod_reform_asked() re-forms. A generation that ends a wait for slots is
  // formed at once (its survivors already ask).
  if (horovod_ && spec_.survivors_reform() && !waiting_for_slots_) {
    for (const auto& [id, record] : workers_) {
      if (record.slot.rank == 0 && !record.end) {
        host_updates_->changed(update, reason, record.key);
        return;
      }
    }
    return;  // no rank 0 runs: the next generation, whatever ends this one, takes the change in
  }
  if (!spec_.survivors_reform()) {  // --max-restarts: fresh workers take the change in
    if (waiting_for_slots_ && membership_->live() == 0) {
      reform(rdzv::Handover::kRestart, reason);
    } else if (!waiting_for_slots_) {
      restart_for(reason);
    }
    return;
  }
  // While waiting for slots the running generation is already broken: its survivors wait
  // for a push; otherwise they take the change in at their next commit.
  reform(waiting_for_slots_ ? rdzv::Handover::kBroken : rdzv::Handover::kHostsUpdated, reason);
}

void Supervisor::poll_discovery() {
  discovery_timer_.expires_after(spec_.elastic.discovery_interval);
  discovery_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_ != JobState::kRunning) return;
    discovery_->run([this](DiscoveryResult result) {
      if (state_ != JobState::kRunning) return;
      on_discovery(std::move(result));
      poll_discovery();
    });
  });
}

void Supervisor::on_discovery(DiscoveryResult result) {
  if (!result.error.empty()) {
    if (result.error != discovery_failure_) {
      note("warning: " + result.error + "; the job keeps the hosts it has");
    }
    discovery_failure_ = std::move(result.error);
    return;
  }
  if (!discovery_failure_.empty()) note("the discovery script works again");
  discovery_failure_.clear();
  const auto change = membership_->update_hosts(result.hosts);
  for (const std::size_t index : change.added) {
    const auto& name = membership_->host_name(index);
    add_discovered_host(index, *std::find_if(result.hosts.begin(), result.hosts.end(),
                                             [&](const HostSpec& h) { return h.name == name; }));
  }
  std::string removed;
  for (const auto& gone : change.removed) {
    for (auto& [id, record] : workers_) {
      if (record.key != gone.key || record.end) continue;
      record.removed = true;
      removed += (removed.empty() ? "rank " : ", rank ") + std::to_string(record.slot.rank) +
                 " (host " + record.slot.host + ")";
    }
  }
  if (!removed.empty()) {
    note("the discovery script no longer lists the slots of " + removed +
         (spec_.survivors_reform() ? ": they leave the job at its next commit"
                                   : ": they leave the job"));
    change_members("slots removed by the discovery script", horovod::HostUpdate::kRemoved);
  } else if (membership_->free_slots(Clock::now()) > 0) {
    grow("slots added by the discovery script");
  }
}

void Supervisor::add_discovered_host(std::size_t index, const HostSpec& host) {
  hosts_.push_back(host);  // index == hosts_.size() - 1: both grow only here
  if (is_local_host(host.name)) {
    for (std::size_t other = 0; other + 1 < hosts_.size(); ++other) {
      if (!is_local_host(hosts_[other].name)) continue;
      note("warning: discovered host " + host.name + " is this machine, already listed as " +
           hosts_[other].name + ": not used (list this machine once with its total slots)");
      membership_->set_reachable(index, false);
      return;
    }
    return;
  }
  membership_->set_reachable(index, false);  // until its SSH connection is up
  if (plan_.bind == "127.0.0.1") {
    note("warning: discovered host " + host.name +
         " is remote but the job started with this machine only, so its rendezvous listens on "
         "loopback: not used (give --network-interface or --rendezvous-addr to allow remote "
         "hosts)");
    return;
  }
  if (!remote_) {
    remote_ = std::make_unique<RemoteWorkers>(io_, sink_, spec_,
                                              std::vector<std::pair<std::size_t, HostSpec>>{},
                                              environment_, remote_callbacks());
  }
  remote_->add_host(index, host);
}

void Supervisor::worker_lost(std::uint32_t key, const std::string& why) {
  if (state_ != JobState::kRunning) return;
  for (auto& [id, record] : workers_) {
    if (record.key != key || record.end) continue;
    record.lost = "missed its heartbeats (" + why + "): killed";
    pool_of(id.host).signal(id, SIGKILL);
    if (ready_.contains(id.host)) {
      // Over a cut-off network neither the kill nor the end may get through: the worker ends
      // here (a later report of its end is ignored).
      const WorkerId lost = id;
      on_worker_exit(lost, ProcessEnd::lost_connection("host " + hosts_[lost.host].name +
                                                       " stopped answering"));
    }
    return;
  }
}

void Supervisor::print_generations() const {
  if (generations_.size() < 2) return;
  const auto at = [&](Clock::time_point t) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s",
                  std::chrono::duration<double>(t - launched_).count());
    return std::string(text);
  };
  std::string text = "generations:";
  for (std::size_t g = 0; g < generations_.size(); ++g) {
    const auto& record = generations_[g];
    text += "\n    " + std::to_string(g) + ": " + plural(record.size, "rank") + ", started " +
            at(record.started) + (record.formed ? ", formed " + at(*record.formed) : "") +
            (record.ended ? ", ended " + at(*record.ended) : "") + ": " +
            (record.end_reason.empty() ? "running when the job ended" : record.end_reason);
  }
  note(text);
}

void Supervisor::stop_workers() {
  kill_all(SIGTERM);
  const std::size_t generation = generations_.size();
  grace_timer_.expires_after(spec_.grace_period);
  grace_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
    if (ec || state_ == JobState::kFinished || generation != generations_.size()) return;
    if (std::size_t left = running()) {
      note("grace period of " + std::to_string(spec_.grace_period.count()) + " ms over: killing " +
           plural(left, "rank") + " with SIGKILL");
    }
    kill_all(SIGKILL);
  });
}

void Supervisor::wait_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec || state_ == JobState::kFinished) return;
    on_signal(signo);
    if (state_ != JobState::kFinished) wait_signal();
  });
}

void Supervisor::on_signal(int signo) {
  if (signo == SIGCHLD) {
    local_.reap();
    return;
  }
  interrupted_ = true;
  if (state_ == JobState::kDraining) {  // every worker ended: only leftovers in their groups
    if (!outcome_) outcome_ = Outcome::interrupted(signo);
    kill_all(SIGKILL);
    for (WorkerPool* pool : pools()) {  // take what they hold now, whatever the console does
      if (pool->open_streams() > 0) pool->close_streams();
    }
    return;
  }
  if (state_ == JobState::kTerminating) {
    if (!sigkill_sent_) note("second " + signal_name(signo) + ": killing every rank now");
    kill_all(SIGKILL);
    return;
  }
  if (!outcome_) outcome_ = Outcome::interrupted(signo);
  if (generations_.back().end_reason.empty()) {
    generations_.back().end_reason = "interrupted (" + signal_name(signo) + ")";
  }
  if (state_ == JobState::kConnecting) {
    note("interrupted (" + signal_name(signo) + ") while connecting to the hosts");
    enter(JobState::kFinished);
    return;
  }
  if (state_ == JobState::kRestarting)
    generations_.back().end_reason += "; then " + signal_name(signo);
  note("interrupted (" + signal_name(signo) + "), terminating " + plural(running(), "rank"));
  terminate();
  maybe_finish();
}

void Supervisor::terminate() {
  if (state_ == JobState::kRunning || state_ == JobState::kRestarting) {
    enter(JobState::kTerminating);
  }
}

void Supervisor::kill_all(int signo) {
  if (signo == SIGKILL) sigkill_sent_ = true;
  for (WorkerPool* pool : pools()) pool->signal_all(signo);
}

void Supervisor::maybe_finish() {
  if (state_ == JobState::kConnecting || state_ == JobState::kFinished || announce_pending_ ||
      ended_ < workers_.size() || (waiting_for_slots_ && state_ == JobState::kRunning)) {
    return;
  }
  if (state_ == JobState::kRestarting) {
    start_next_generation();
    return;
  }
  generations_.back().ended = Clock::now();
  if (generations_.back().end_reason.empty()) {
    generations_.back().end_reason = outcome_ ? "the job failed" : "every rank exited 0";
  }
  enter(open_streams() == 0 ? JobState::kFinished : JobState::kDraining);
}

// The one place the job's state changes, with each state's entry actions.
void Supervisor::enter(JobState next) {
  const bool allowed = [&] {
    switch (state_) {
      case JobState::kConnecting:
        return next == JobState::kRunning || next == JobState::kFinished;
      case JobState::kRunning:
        return next != JobState::kConnecting && next != JobState::kRunning;
      case JobState::kRestarting:
        return next == JobState::kRunning || next == JobState::kTerminating ||
               next == JobState::kFinished;
      case JobState::kTerminating:
        return next == JobState::kDraining || next == JobState::kFinished;
      case JobState::kDraining:
        return next == JobState::kFinished;
      case JobState::kFinished:
        return false;
    }
    return false;
  }();
  if (!allowed) return;
  launcher_log()->debug("job {} -> {}", state_name(state_), state_name(next));
  const JobState previous = std::exchange(state_, next);
  switch (next) {
    case JobState::kConnecting:
      break;
    case JobState::kRunning:
      grace_timer_.cancel();  // a restart's: it must not reach the new generation
      break;
    case JobState::kRestarting:
    case JobState::kTerminating:
      waiting_for_slots_ = false;
      elastic_timer_.cancel();
      cooldown_timer_.cancel();
      discovery_timer_.cancel();
      if (discovery_) discovery_->cancel();
      // A restart's workers already have their SIGTERM: its grace period goes on unchanged.
      if (previous != JobState::kRestarting) stop_workers();
      break;
    case JobState::kDraining:
      arm_drain_timer();
      break;
    case JobState::kFinished:
      finish();
      break;
  }
}

// kDraining: the local pipes get kDrainTimeout while the console takes output (an unread pipe
// is not a held one; after a signal, no more waiting for the console); a pipe still open then
// is held by a worker's leftover child. A remote worker's channel closes by itself once its
// output is through (its agent bounds the wait for leftovers), or with its SSH session; it
// gets kRemoteDrainTimeout while the console takes output (a host that stopped answering may
// take many minutes to be noticed), and after a signal it is not waited for either.
void Supervisor::arm_drain_timer() {
  drain_timer_.expires_after(kDrainTimeout);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_ == JobState::kFinished) return;
    if (interrupted_) {
      for (WorkerPool* pool : pools()) {
        if (pool->open_streams() > 0) pool->close_streams();
      }
      return;
    }
    if (sink_.console().any_paused()) {
      arm_drain_timer();
      return;
    }
    if (local_.open_streams() > 0) local_.close_streams();
    if (!remote_ || remote_->open_streams() == 0) return;
    remote_drain_waited_ += kDrainTimeout;
    if (remote_drain_waited_ < kRemoteDrainTimeout) return arm_drain_timer();
    remote_->close_streams();
  });
}

// kFinished's entry: stop every timer and signal watch, leave nothing behind, report.
void Supervisor::finish() {
  grace_timer_.cancel();
  drain_timer_.cancel();
  announce_timer_.cancel();
  elastic_timer_.cancel();
  cooldown_timer_.cancel();
  discovery_timer_.cancel();
  if (discovery_) discovery_->cancel();
  rank_zero_stdin_.close();
  boost::system::error_code ignored;
  signals_.clear(ignored);  // restores the default dispositions
  signals_.cancel(ignored);
  for (WorkerPool* pool : pools()) pool->close();  // nothing a worker left behind survives
  if (spec_.verbose) note("job finished in " + millis_since(launched_));
  on_finished_();
}

void Supervisor::fail_job(const rdzv::JobError& error) {
  if (state_ == JobState::kFinished) return;
  if (state_ == JobState::kRestarting) {  // the generation it concerns is being replaced
    launcher_log()->debug("rendezvous error while restarting, ignored: {}", error.message);
    return;
  }
  if (!outcome_) {
    std::string text = error.message;
    if (error.code == rdzv::ErrorCode::kTimeout) {  // the start timeout
      text +=
          " (a missing rank has not called hvdrun::init(); raise --start-timeout if it is "
          "slow to start)";
    }
    if (generations_.back().end_reason.empty()) generations_.back().end_reason = text;
    outcome_ = Outcome::failed(Outcome::Kind::kJobError, std::move(text));
    note("rendezvous failed; terminating " + plural(running(), "rank"));
  }
  terminate();
  maybe_finish();
}

void Supervisor::horovod_in_use(const std::string& peer) {
  if (!spec_.survivors_reform() || horovod_) return;
  horovod_ = true;
  note("a worker stored a key in Horovod's rendezvous (from " + peer +
       "): the job runs Horovod; its workers re-form after a failure, and host changes are sent "
       "to its rank 0, to be taken in at the next state.commit()");
}

void Supervisor::horovod_registered(const std::string& name,
                                    horovod::WorkerRegistration registration) {
  if (!host_updates_) return;
  // A worker registers once, under the name its environment gave it at its start (it asks for
  // a new place only after registering); of two running workers started under one name, the
  // one that has not registered yet.
  for (auto& [id, record] : workers_) {
    if (record.end || record.horovod_registered || record.horovod_name != name) continue;
    record.horovod_registered = true;
    host_updates_->registered(record.key, std::move(registration));
    return;
  }
  launcher_log()->info(
      "Horovod worker {} registered its notification service, but no running worker started "
      "under that name has not registered yet: it is not told of host changes",
      name);
}

bool Supervisor::horovod_reform_asked(std::size_t waiting) {
  if (!membership_ || !spec_.survivors_reform() || state_ != JobState::kRunning || outcome_ ||
      waiting_for_slots_) {
    return false;
  }
  // A member that does not ask yet (it has not registered; or it died before it did, and its
  // exit re-forms the job) is waited for.
  if (waiting < membership_->live()) return false;
  if (host_updates_->pending()) {
    const std::string reason = host_updates_->pending_reason();
    note("every Horovod worker (" + std::to_string(waiting) +
         ") asked for its place after the host change; re-forming");
    reform(rdzv::Handover::kHostsUpdated, reason);
    return true;
  }
  const std::string reason = "every Horovod worker (" + std::to_string(waiting) +
                             ") asked to re-form, though none exited: a collective failed";
  note(reason + "; re-forming with the same workers");
  reform(rdzv::Handover::kBroken, reason);
  return true;
}

void Supervisor::all_joined() {
  if (!generations_.back().formed) generations_.back().formed = Clock::now();
  if (spec_.verbose) {
    note("all " + plural(workers_.size(), "rank") + " joined the rendezvous, " +
         millis_since(launched_) + " after start");
  }
}

// How long the output of a job ended by a signal may still take to be written.
constexpr auto kInterruptedOutputWait = std::chrono::seconds(2);

// Waits until the console has written every queued line: as long as its readers take it, or
// kInterruptedOutputWait after a signal ended the job; a SIGINT, SIGTERM or SIGHUP meanwhile
// gives up. What is left then is said on stderr, if stderr still takes it.
void finish_output(asio::io_context& io, Console& console, bool interrupted) {
  io.restart();
  bool stop = false;
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&stop](const boost::system::error_code& ec, int) { stop = !ec; });
  const auto limit =
      interrupted ? std::optional<std::chrono::milliseconds>(kInterruptedOutputWait) : std::nullopt;
  if (console.drain(limit, [&] {
        io.poll();
        return stop;
      })) {
    return;
  }
  const auto left = console.queued(StreamKind::kStdout);
  if (left > 0 && !console.paused(StreamKind::kStderr)) {
    note(std::to_string(left) + " bytes of output were not written: nothing reads hvdrun's stdout");
    console.drain(std::chrono::milliseconds(200), nullptr);
  }
}

}  // namespace

// An elastic job with a discovery script starts on the hosts it gives, with every slot up to
// --max-np (as horovodrun does).
JobSpec with_discovered_hosts(const JobSpec& given, std::vector<HostSpec> hosts) {
  JobSpec spec = given;
  long long slots = 0;
  for (const auto& h : hosts) slots += h.slots;
  spec.hosts = std::move(hosts);
  spec.num_proc = static_cast<int>(std::min<long long>(slots, *spec.elastic.max_np));
  return spec;
}

int run_job(const JobSpec& given, const std::map<std::string, std::string>& environment) {
  setup_logging(given.log_level);
  if (given.command.empty()) throw UsageError("no program to run was given");
  Watchdog watchdog = Watchdog::start();  // before anything could start a thread
  const JobSpec spec =
      given.elastic.discovery_script.empty()
          ? given
          : with_discovered_hosts(given, initial_hosts(given, watchdog, environment));
  auto start = Clock::now();
  std::vector<Slot> slots = place(spec.hosts, spec.num_proc);
  const auto remote = remote_hosts(spec, slots);
  const auto plan = plan_addresses(spec, !remote.empty());
  if (spec.verbose) {
    note("placement: " + plural(slots.size(), "rank") + " on " + plural(spec.hosts.size(), "host") +
         " (" + std::to_string(remote.size()) + " remote) in " + millis_since(start));
  }
  asio::io_context io(1);
  Console console(io);
  LogRoute log_route(console, spec.log_level);
  OutputSink sink(
      {spec.elastic.max_np.value_or(spec.num_proc), spec.prefix_timestamp, spec.output_dir},
      console);

  start = Clock::now();
  std::optional<rdzv::Server> server;
  std::optional<horovod::KvServer> horovod_kv;
  std::optional<PortReservation> master_port;  // MASTER_PORT of the current generation
  Supervisor supervisor(
      io, spec, slots, watchdog, sink, environment,
      [&server, &horovod_kv] {
        server->close();
        horovod_kv->close();
      },
      [&server, &horovod_kv, &master_port](Supervisor::GenerationStart generation) {
        std::vector<Slot> next;
        for (const auto& m : generation.members) next.push_back(m.slot);
        std::sort(next.begin(), next.end(),
                  [](const Slot& a, const Slot& b) { return a.rank < b.rank; });
        server->start_generation(std::move(generation.members), generation.how,
                                 std::move(generation.reason));
        auto kv_plan = horovod_plan(next);
        kv_plan.survivors = std::move(generation.survivors);
        horovod_kv->reset(std::move(kv_plan));
        master_port.reset();  // a fresh port: the old one may still be in TIME_WAIT
        master_port.emplace(PortReservation::reserve());
        return master_port->port();
      });
  rdzv::ServerOptions options;
  options.secret = rdzv::make_secret();
  options.slots = slots;
  options.start_timeout = spec.start_timeout;
  options.bind_address = plan.bind;
  const WorkerCount workers =
      count_workers(slots, remote, static_cast<std::size_t>(spec.elastic.max_np.value_or(0)));
  options.max_unauthenticated = rendezvous_max_unauthenticated(workers, open_file_limit());
  if (spec.elastic_job()) {
    options.reform_timeout = spec.elastic.timeout;
    options.heartbeat_interval = rdzv::kDefaultHeartbeat;
    options.heartbeat_timeout = spec.elastic.heartbeat_timeout;
  }
  server.emplace(io, options,
                 rdzv::ServerCallbacks{
                     [&supervisor](const rdzv::JobError& error) { supervisor.fail_job(error); },
                     [&supervisor] { supervisor.all_joined(); },
                     [&supervisor](std::uint32_t worker, const std::string& why) {
                       supervisor.worker_lost(worker, why);
                     }});
  // Horovod's clients send no credentials: where hvdrun's own rendezvous listens (plan.bind:
  // loopback for a local job unless --network-interface or --rendezvous-addr says otherwise).
  auto kv_options = horovod_server_options(plan.bind, workers, open_file_limit());
  if (spec.survivors_reform()) kv_options.rank_query_hold = rank_query_hold(spec.elastic.timeout);
  kv_options.on_first_put = [&supervisor](const std::string& peer) {
    supervisor.horovod_in_use(peer);
  };
  kv_options.on_reform_asked = [&supervisor](std::size_t waiting) {
    return supervisor.horovod_reform_asked(waiting);
  };
  kv_options.on_registered = [&supervisor](const std::string& name,
                                           horovod::WorkerRegistration registration) {
    supervisor.horovod_registered(name, std::move(registration));
  };
  horovod_kv.emplace(io, std::move(kv_options), horovod_plan(slots));
  master_port.emplace(PortReservation::reserve());
  RendezvousInfo rdzv;
  rdzv.addr = plan.fixed;
  rdzv.port = server->port();
  rdzv.secret = options.secret;
  rdzv.master_addr = plan.fixed;
  rdzv.master_port = master_port->port();
  rdzv.horovod_port = horovod_kv->port();
  rdzv.run_id = make_run_id();
  rdzv.size = static_cast<int>(slots.size());
  if (spec.verbose) {
    note("rendezvous server up on " + plan.bind + ":" + std::to_string(rdzv.port) +
         ", Horovod's on port " + std::to_string(rdzv.horovod_port) + ", in " +
         millis_since(start));
  }
  note_omp_default(spec, slots, environment);
  supervisor.launch(plan, rdzv, remote);
  io.run();
  watchdog.disarm();
  supervisor.print_summary();
  finish_output(io, console, supervisor.interrupted());
  return supervisor.exit_status();
}

}  // namespace hvdrun::launcher
