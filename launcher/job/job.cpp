// The job core (job.h): construction, launch, the events of workers, the policy's actions
// carried out, and the lifecycle's transitions.
#include "launcher/job/job.h"

#include <signal.h>

#include <stdexcept>
#include <utility>

#include "launcher/output/logging.h"
#include "launcher/plan/placement.h"
#include "launcher/workers/worker_env.h"
#include "launcher/workers/worker_pools.h"

namespace hvdrun::launcher {
namespace {

// Where the ranks' stack files go: beside their output (--output-filename), else a directory
// of the job's own under $TMPDIR (kept after the job: the files are what is left of a hang).
std::filesystem::path stacks_dir(const JobSpec& spec, const std::string& run_id) {
  if (spec.output_dir) return std::filesystem::path(*spec.output_dir) / "stacks";
  std::error_code ec;
  return std::filesystem::temp_directory_path(ec) / (run_id + "-stacks");
}

// The membership `make` makes from the job's parts (JobStart::membership, required).
std::unique_ptr<Membership> made_membership(
    const std::function<std::unique_ptr<Membership>(const JobParts&)>& make,
    const JobParts& parts) {
  if (!make) throw std::logic_error("a job needs its membership: JobStart::membership is unset");
  return make(parts);
}

}  // namespace

Job::Job(boost::asio::io_context& io, JobStart start, Watchdog& watchdog, OutputSink& sink,
         const std::map<std::string, std::string>& environment)
    : pools_(start.pools ? start.pools(*this)
                         : std::make_unique<WorkerPools>(io, start.spec, start.run.hosts, watchdog,
                                                         sink, environment, start.local_hosts,
                                                         static_cast<PoolEvents&>(*this))),
      spec_(start.spec),
      run_(start.run),
      sink_(sink),
      environment_(environment),
      rendezvous_(
          {spec_, *this, *this, pools_, policy_, membership_, workers_, generations_, requests_}),
      faces_(io, std::move(start.server), std::move(start.horovod), start.slots, rendezvous_),
      policy_(make_policy(spec_)),
      generations_(Clock::now(), start.slots.size()),
      host_start_(std::move(start.remote)),
      announce_timer_(io),
      publisher_(std::move(start.components), *pools_, generations_),
      requests_(io, stacks_dir(spec_, start.run_id), faces_, *pools_, workers_, publisher_,
                *policy_, *this, membership_),
      membership_(made_membership(start.membership, parts())),
      progress_(io, faces_, publisher_, membership_->spares()),
      teardown_(io, spec_, sink_, *pools_, workers_, membership_->spares().table(), generations_,
                requests_.dumps(), *this, requests_) {
  for (const auto& slot : start.slots) {
    sink_.add_worker(first_worker(slot), slot.rank, slot.host);
    workers_.add(first_worker(slot), WorkerKey{static_cast<std::uint32_t>(slot.rank)}, slot);
  }
  RendezvousInfo rdzv;
  rdzv.addr = start.plan.fixed;
  rdzv.port = faces_.port();
  rdzv.secret = faces_.secret();
  rdzv.master_addr = start.plan.fixed;
  rdzv.master_port = faces_.master_port();
  rdzv.horovod_port = faces_.horovod_port();
  rdzv.run_id = std::move(start.run_id);
  rdzv.size = static_cast<int>(start.slots.size());
  const StackDumps& dumps = requests_.dumps();
  rdzv.stacks_dir = dumps.hook_dir().string();
  if (!dumps.hook_error().empty()) {
    launcher_log()->warn("no Python stacks for this job: {}", dumps.hook_error());
  }
  pools_->set_addresses(start.plan, rdzv);
  publisher_.attach(requests_);
}

Job::~Job() {
  pools_.reset();
}

JobParts Job::parts() {
  return {spec_,    run_,         sink_,      environment_, faces_, *pools_,
          workers_, generations_, publisher_, *policy_,     *this,  requests_};
}

void Job::launch() {
  warn_if_stdin_not_read();
  generations_.current().started = Clock::now();
  teardown_.watch_signals();
  progress_.start();
  if (host_start_.remote().empty()) {
    start_workers();
    return;
  }
  pools_->connect(host_start_.remote());
}

JobFacts Job::facts() const {
  JobFacts facts;
  membership_->describe(facts);
  facts.newcomers_running = workers_.running_newcomers();
  facts.members_running = workers_.running() - facts.newcomers_running;
  facts.waiting_for_slots = state_.is(JobState::kWaitingForSlots);
  facts.winding_down = workers_.any_finished();
  return facts;
}

std::size_t Job::running() const {
  return state_.is(JobState::kConnecting) ? 0 : workers_.running();
}

void Job::start_workers() {
  enter(JobState::kRunning);
  std::vector<WorkerId> ids;
  workers_.for_each([&](const WorkerRecord& r) { ids.push_back(r.id); });
  launch_workers(ids);
  membership_->spares().refill();
  if (generations_.count() == 1) membership_->started();
}

void Job::launch_workers(const std::vector<WorkerId>& ids) {
  const WorkerRecord* rank0 = workers_.rank_zero();
  const std::size_t rank0_host = rank0 ? rank0->id.host : 0;
  std::vector<WorkerLaunch> launches;
  for (const auto& id : ids) {
    WorkerRecord& record = *workers_.find(id);
    workers_.name_for_horovod(record);
    launches.push_back(
        {id, record.slot(),
         worker_environment(environment_, spec_, record.slot(),
                            pools_->rendezvous_for(id.host, rank0_host), record.key.value)});
  }
  pools_->start(std::move(launches));
  publisher_.started(&JobEvents::workers_started, workers_, ids);
}

void Job::worker_exited(const WorkerId& id, ProcessEnd end) {
  if (Spares& spares = membership_->spares(); spares.is_spare(id)) {
    spares.exited(id, std::move(end));
    return;
  }
  WorkerRecord* record = workers_.find(id);
  if (!record || record->end()) return;
  workers_.set_end(*record, std::move(end));
  publisher_.worker(&JobEvents::worker_ended, *record);
  const WorkerEnded ended{id, *record->end(), record->removed};
  if (record->removed) {  // its slot left the job: however it ended, the job goes on
    note("rank " + std::to_string(record->slot().rank) + " (host " + record->slot().host +
         ") left the job with its slot: " + record->end()->what_happened());
    membership_->worker_ended(*record);
    workers_.erase(id);
    if (state_.active() && !outcome_) carry_out(policy_->worker_ended(ended, facts()), nullptr);
    maybe_finish();
    return;
  }
  // Ends after the generation was told to stop are expected, not failures.
  const Action action = state_.active() ? policy_->worker_ended(ended, facts()) : Action{};
  membership_->worker_ended(*record);
  carry_out(action, record);
  maybe_finish();
}

// The one place a policy's action is carried out. `ended`: the worker whose end it answers.
void Job::carry_out(const Action& action, WorkerRecord* ended) {
  if (!action.note.empty()) note(action.note);
  switch (action.kind) {
    case Action::Kind::kContinue:
      return;
    case Action::Kind::kFailJob:
      if (outcome_) return;
      if (ended) return fail_with(*ended);
      return fail_for(action.reason);
    case Action::Kind::kRestartAll:
      if (ended) return restart(*ended);
      return restart_for(action.reason);
    case Action::Kind::kReform:
      return membership_->reform(ended ? &ended->id : nullptr, action.how, action.reason);
    case Action::Kind::kFinishJob:
      generations_.end_reason_if_none("every rank that took part exited 0");
      return terminate();
    case Action::Kind::kNotifyRankZero:
      return membership_->notify_rank_zero(action.change, action.reason);
  }
}

// The job's failure is this worker's end: said once its last lines are out.
void Job::fail_with(WorkerRecord& record) {
  // A worker the launcher gave up (its heartbeats) failed by that, not by the kill that
  // followed.
  ProcessEnd end = record.lost.empty() ? *record.end() : ProcessEnd::lost_connection(record.lost);
  end.pid = record.end()->pid;
  generations_.current().end_reason = record.who() + " " + end.what_happened();
  Outcome outcome = Outcome::worker_failed(record.id, record.slot(), std::move(end));
  outcome.exhausted = policy_->exhausted();
  outcome.after_others = policy_->survived() > 0;
  if (!fail(std::move(outcome), generations_.current().end_reason)) return;
  if (!pools_->streams_open(record.id)) return announce_failure();
  announce_pending_ = true;  // its last lines come first, bounded like the final drain
  announce_timer_.expires_after(kDrainTimeout);
  announce_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !state_.is(JobState::kFinished)) announce_failure();
  });
}

void Job::killed_after_grace(std::size_t ranks) {
  if (outcome_) outcome_->killed_after_grace = ranks;
}

bool Job::fail(Outcome outcome, const std::string& why) {
  if (outcome_) return false;
  generations_.end_reason_if_none(why);
  outcome_ = std::move(outcome);
  return true;
}

// The job fails for `reason`, no worker's end: every worker is taken down.
void Job::fail_for(const std::string& reason) {
  generations_.current().end_reason = reason;
  if (!fail(Outcome::failed(Outcome::Kind::kJobError, reason), reason)) return;
  const std::size_t left = running();
  note("job failed: " + reason + (left ? "; terminating " + plural(left, "rank") : std::string()));
  terminate();
}

void Job::stream_closed(const WorkerId& id) {
  if (announce_pending_ && outcome_ && id == outcome_->worker && !pools_->streams_open(id)) {
    announce_failure();
  }
  maybe_finish();
}

// The note about the first failed worker, then the teardown of the others.
void Job::announce_failure() {
  announce_pending_ = false;
  announce_timer_.cancel();
  const auto& end = outcome_->end;
  const std::size_t others = state_.active() ? running() : 0;
  requests_.happened("rank " + std::to_string(outcome_->rank) + " failed: the job ends",
                     {{"host", outcome_->host}, {"end", end.what_happened()}});
  note("rank " + std::to_string(outcome_->rank) + " (host " + outcome_->host +
       (end.pid ? ", pid " + std::to_string(end.pid) : "") + ") " + end.what_happened() +
       (outcome_->exhausted.empty() ? "" : " (" + outcome_->exhausted + ")") +
       (others ? "; terminating " + std::to_string(others) + " other " +
                     (others == 1 ? "rank" : "ranks")
               : ""));
  terminate();
  maybe_finish();
}

void Job::maybe_finish() {
  // Every member ended: the spares are told they are not needed (stop_workers).
  const Spares& spares = membership_->spares();
  if (state_.is(JobState::kRunning) && workers_.running() == 0 && spares.running() > 0) {
    terminate();
  }
  if (state_.is(JobState::kConnecting) || state_.is(JobState::kFinished) || announce_pending_ ||
      workers_.running() > 0 || spares.running() > 0 || state_.is(JobState::kWaitingForSlots)) {
    return;
  }
  if (state_.is(JobState::kRestarting)) return start_next_generation();
  if (state_.is(JobState::kDraining)) {
    if (pools_->open_streams() == 0) enter(JobState::kFinished);
    return;
  }
  generations_.current().ended = Clock::now();
  generations_.end_reason_if_none(outcome_ ? "the job failed" : "every rank exited 0");
  enter(pools_->open_streams() == 0 ? JobState::kFinished : JobState::kDraining);
}

void Job::terminate() {
  if (state_.active() || state_.is(JobState::kRestarting)) enter(JobState::kTerminating);
}

// The one place the job's state changes, with each state's entry actions.
void Job::enter(JobState next) {
  const JobState previous = state_.state();
  if (!state_.enter(next)) return;
  switch (next) {
    case JobState::kConnecting:
    case JobState::kWaitingForSlots:
      break;
    case JobState::kRunning:
      teardown_.cancel_grace();  // a restart's: it must not reach the new generation
      membership_->running();    // a wait for slots is over
      break;
    case JobState::kRestarting:
    case JobState::kTerminating:
      membership_->stop();
      // A restart's workers already have their SIGTERM: its grace period goes on unchanged.
      if (previous != JobState::kRestarting) {
        membership_->spares().dismiss();
        teardown_.stop_workers();
      }
      break;
    case JobState::kDraining:
      teardown_.drain();
      break;
    case JobState::kFinished:
      finish();
      break;
  }
}

// kFinished's entry.
void Job::finish() {
  announce_timer_.cancel();
  requests_.dumps().cancel();
  membership_->stop();
  progress_.stop();  // the last second's samples (of workers still connected)
  teardown_.finish();
  // A per-node start's agents connect again for the run that follows this one, if any (the job
  // after its preflight) and if this one was not interrupted.
  pools_->end_job(outcome_exit_status(outcome_), run_.another_run && !teardown_.interrupted_at());
  pools_->close();  // nothing a worker left behind survives
  if (spec_.verbose) note("job finished in " + millis_since(generations_.launched()));
  publisher_.generation_ended();
  progress_.flush();
  publisher_.publish(&JobEvents::job_ended);
  faces_.close();
}

int Job::exit_status() const {
  const int status = outcome_exit_status(outcome_);
  return status == 0 && !sink_.write_failed().empty() ? 1 : status;
}

void Job::print_summary() const {
  print_outcome_summary(outcome_, sink_);
  publisher_.summarize();
  if (const std::string text = generations_.describe(); !text.empty()) note(text);
  if (const std::string text = membership_->spares().describe(); !text.empty()) note(text);
}

std::string Job::incomplete_output() const {
  if (outcome_ || sink_.write_failed().empty()) return {};
  return "job failed: the workers succeeded but their output is incomplete: cannot write " +
         sink_.write_failed();
}

}  // namespace hvdrun::launcher
