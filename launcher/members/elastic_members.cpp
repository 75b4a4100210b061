// An elastic job's membership (elastic_members.h): re-formations, the wait for slots, growth
// after cooldowns, discovered and preflight-failed hosts, stragglers, Horovod host updates.
#include "launcher/members/elastic_members.h"

#include <signal.h>

#include <limits>

#include "common/duration_text.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

// How long an elastic Horovod rank 0's notification service has for each of its addresses,
// and how often a host change is sent again until the workers take it in.
constexpr auto kNotificationTimeout = std::chrono::seconds(5);
constexpr auto kNotificationResend = std::chrono::seconds(1);

horovod::HostUpdate host_update(SlotsChange change) {
  return change == SlotsChange::kAdded ? horovod::HostUpdate::kAdded
                                       : horovod::HostUpdate::kRemoved;
}

}  // namespace

ElasticMembers::ElasticMembers(boost::asio::io_context& io, const JobParts& parts,
                               const std::vector<Slot>& slots, Watchdog& watchdog,
                               LocalHosts& local_hosts)
    : parts_(parts),
      members_(parts.run.hosts, *parts.spec.elastic.max_np, parts.spec.elastic.cooldown_min,
               parts.spec.elastic.cooldown_max),
      spares_(parts, members_, [this] { watch_cooldowns(); }),
      elastic_timer_(io),
      cooldown_timer_(io) {
  const JobSpec& spec = parts_.spec;
  for (const auto& slot : slots) {
    members_.add(first_worker(slot), static_cast<std::uint32_t>(slot.rank), slot.rank);
  }
  for (const auto& host : parts_.run.preflight_cooled) preflight_cooled_.insert(host.name);
  if (!spec.elastic.discovery_script.empty()) {
    discovery_.emplace(
        io, watchdog, spec.elastic, parts_.environment, local_hosts, parts_.run.alias_note,
        [this] { return parts_.core.lifecycle().active(); },
        [this](std::vector<HostSpec> hosts) { on_discovered_hosts(hosts); });
  }
  if (spec.survivors_reform()) {
    host_updates_.emplace(io, kNotificationTimeout, kNotificationResend,
                          [](const std::string& line) { note(line); });
  }
}

void ElasticMembers::describe(JobFacts& facts) const {
  facts.live = members_.live();
  if (host_updates_) {
    facts.host_update_pending = host_updates_->pending();
    facts.host_update_reason = host_updates_->pending_reason();
  }
}

void ElasticMembers::started() {
  if (discovery_) return discovery_->poll();
  if (!preflight_cooled_.empty()) add_preflight_failed_hosts();
}

void ElasticMembers::worker_ended(const WorkerRecord& record) {
  if (host_updates_) host_updates_->forget(record.key.value);
  if (record.end() && record.end()->success()) members_.remove(record.key.value);  // finished
}

// In an elastic job, a host that failed as a host (lost, unresponsive, could not start the
// worker) cools down before a restart; a program that failed there does not make its host
// suspect.
std::string ElasticMembers::restarting_after(const WorkerRecord& failed) {
  if (failed.lost.empty() && failed.end()->ran()) return {};
  const auto cooldown = members_.cool_down(failed.id.host, Clock::now());
  return "; host " + parts_.pools.host_name(failed.id.host) + " unused for " +
         std::to_string(cooldown.count()) + " s";
}

// The next generation takes every slot available now, up to --max-np (waiting for --min-np if
// need be).
void ElasticMembers::start_next_generation(const std::string& reason) {
  parts_.workers.for_each([&](const WorkerRecord& r) { members_.remove(r.key.value); });
  parts_.workers.clear();
  parts_.core.enter(JobState::kRunning);
  reform(rdzv::Handover::kRestart, reason);
  if (discovery_) discovery_->poll();
}

void ElasticMembers::reform(const WorkerId* ended, rdzv::Handover how, const std::string& reason) {
  if (ended) return drop_and_reform(*ended);
  reform(how, reason);
}

void ElasticMembers::notify_rank_zero(SlotsChange change, const std::string& reason) {
  // No rank 0 runs: the next generation, whatever ends this one, takes the change in.
  if (const WorkerRecord* rank0 = parts_.workers.rank_zero(true); rank0 && host_updates_) {
    host_updates_->changed(host_update(change), reason, rank0->key.value);
  }
}

// The failed worker is dropped, its host cools down, the survivors re-form. A host lost as a
// whole (its agent or link gone: the pool reported a lost connection) takes every worker it
// still ran into the same re-formation: one failure of the host, one cooldown.
void ElasticMembers::drop_and_reform(WorkerId id) {
  WorkerTable& workers = parts_.workers;
  const WorkerRecord& record = *workers.find(id);
  const std::string name = record.who();
  const std::string what = record.lost.empty() ? record.end()->what_happened() : record.lost;
  const bool host_lost =
      record.lost.empty() && record.end()->kind == ProcessEnd::Kind::kLostConnection;
  const auto now = Clock::now();
  parts_.generations.current().ended = now;
  parts_.generations.current().end_reason = name + " " + what;
  drop(id);
  const auto cooldown = members_.cool_down(id.host, now);
  std::vector<WorkerId> with_host;
  if (host_lost) {
    workers.for_each([&](const WorkerRecord& r) {
      if (r.id.host == id.host && !r.end()) with_host.push_back(r.id);
    });
  }
  for (const WorkerId& other : with_host) {
    parts_.pools.signal(other, SIGKILL);
    drop(other);  // its own report of the loss, when it comes, is ignored
  }
  if (host_lost) spares_.drop_host(id.host);  // lost with it: none of them is promoted
  const std::string others =
      with_host.empty() ? std::string()
                        : " (and with it " + plural(with_host.size(), "other worker") + ")";
  note(name + " " + what + others + "; host " + parts_.pools.host_name(id.host) + " unused for " +
       std::to_string(cooldown.count()) + " s; re-forming with " +
       plural(members_.live(), "surviving worker"));
  reform(rdzv::Handover::kBroken, name + " " + what);
}

// A new generation of the members plus replacements on free slots, if at least --min-np can
// take part; else the wait for slots (bounded by --elastic-timeout).
void ElasticMembers::reform(rdzv::Handover how, const std::string& reason) {
  JobCore& core = parts_.core;
  if (!core.lifecycle().active()) return;
  WorkerTable& workers = parts_.workers;
  const auto now = Clock::now();
  const std::size_t min_np = static_cast<std::size_t>(*parts_.spec.elastic.min_np);
  if (members_.live() + members_.free_slots(now) < min_np) return wait_for_slots(reason);
  if (core.lifecycle().is(JobState::kWaitingForSlots)) core.enter(JobState::kRunning);
  // A job whose workers have begun to finish starts new ones only to keep its survivors at
  // --min-np (a newcomer gets their state): one beyond, or one with no survivor to learn
  // from, would run the training again.
  const std::size_t limit = !workers.any_finished() ? std::numeric_limits<std::size_t>::max()
                            : members_.live() > 0   ? min_np
                                                    : 0;
  std::vector<WorkerId> added, started;
  std::set<WorkerId> promoted;  // spares: they run already
  for (const auto& w : members_.fill(now, limit)) {
    added.push_back(w.id);
    if (w.promoted) {
      spares_.promote(w.id);
      promoted.insert(w.id);
      continue;
    }
    started.push_back(w.id);
    workers.add(w.id, WorkerKey{w.key}, Slot{});
  }
  auto members = members_.next_generation();
  auto survivors = named_survivors(members);
  name_spares(members, promoted, survivors);
  take_ranks(members);
  const bool joins_survivors = added.size() < members.size();
  for (const auto& id : added) {
    WorkerRecord& record = *workers.find(id);
    if (promoted.contains(id)) {
      parts_.sink.set_rank(id, record.slot().rank);
      workers.name_for_horovod(record);  // what it registers under once promoted
    } else {
      parts_.sink.add_worker(id, record.slot().rank, record.slot().host);
    }
    if (joins_survivors) workers.set_newcomer(record);  // they trained before it
  }
  const std::size_t size = members.size();
  parts_.generations.end(now, reason);  // hosts updated: the running generation ends here
  parts_.pools.rendezvous().size = static_cast<int>(size);
  parts_.start_generation({std::move(members), how, reason, std::move(survivors)});
  if (host_updates_) host_updates_->reformed();  // this generation takes every change in
  parts_.publisher.generation_ended();
  parts_.generations.begin(now, size);
  note_generation(how, size, added.size(), promoted.size());
  core.launch_workers(started);
  spares_.refill();
  watch_cooldowns();
}

// A promoted Horovod spare asks for its place under its spare name; so does one promoted before
// that has not registered yet.
void ElasticMembers::name_spares(const std::vector<rdzv::Member>& members,
                                 const std::set<WorkerId>& promoted,
                                 std::map<std::string, Slot>& survivors) {
  for (const auto& m : members) {
    const WorkerRecord* record = parts_.workers.find(WorkerKey{m.worker});
    if (record &&
        (promoted.contains(record->id) || (record->from_spare && !record->horovod_registered))) {
      survivors[horovod_spare_name(m.worker)] = m.slot;
    }
  }
}

void ElasticMembers::note_generation(rdzv::Handover how, std::size_t size, std::size_t added,
                                     std::size_t promoted) {
  const std::string generation = "generation " + std::to_string(parts_.generations.number()) + ": ";
  if (how == rdzv::Handover::kRestart) {
    note(generation + plural(size, "worker") + " on the slots available");
  } else if (added > 0 && added == size) {
    // Nobody holds the state of the training to hand over: say that it is lost.
    note(generation + plural(size, "worker") +
         ", all of them new: no worker survived to hand "
         "over the training's state, so it starts again from its initial state");
  } else if (added > 0) {
    note(generation + plural(size, "worker") + ", " + std::to_string(added) + " of them new" +
         (promoted == 0   ? std::string()
          : promoted == 1 ? std::string(" (1 a warm spare)")
                          : " (" + std::to_string(promoted) + " warm spares)"));
  }
}

void ElasticMembers::wait_for_slots(const std::string& reason) {
  watch_cooldowns();
  JobCore& core = parts_.core;
  if (core.lifecycle().is(JobState::kWaitingForSlots)) return;
  core.enter(JobState::kWaitingForSlots);
  const auto timeout = parts_.spec.elastic.timeout;
  const int min_np = *parts_.spec.elastic.min_np;
  const std::size_t free = members_.free_slots(Clock::now());
  note("below --min-np " + std::to_string(min_np) + ": " + plural(members_.live(), "worker") +
       " left and " + (free == 0 ? std::string("no free slot") : plural(free, "free slot")) +
       "; waiting up to " + std::to_string(timeout.count()) + " s (--elastic-timeout) for slots");
  elastic_timer_.expires_after(timeout);
  elastic_timer_.async_wait([this, timeout, min_np, reason](const boost::system::error_code& ec) {
    JobCore& job = parts_.core;
    if (ec || !job.lifecycle().is(JobState::kWaitingForSlots)) return;
    if (!job.outcome()) {
      const std::string text = "only " + plural(members_.live(), "worker") + " for " +
                               std::to_string(timeout.count()) +
                               " s (--elastic-timeout), below --min-np " + std::to_string(min_np) +
                               " (after " + reason + ")";
      job.carry_out(parts_.policy.limit_reached(Limit::kElasticTimeout, text, job.facts()));
    }
    job.terminate();
    job.maybe_finish();
  });
}

void ElasticMembers::watch_cooldowns() {
  const auto end = members_.next_cooldown_end();
  const auto max_np = static_cast<std::size_t>(*parts_.spec.elastic.max_np);
  const bool spares_short =
      members_.spares() < static_cast<std::size_t>(parts_.spec.elastic.spares);
  if (!end || (members_.live() >= max_np && !spares_short)) return;
  cooldown_timer_.expires_at(*end);
  cooldown_timer_.async_wait([this, max_np](const boost::system::error_code& ec) {
    if (ec || !parts_.core.lifecycle().active()) return;
    members_.end_cooldowns(Clock::now());  // the ones after this moment get a new wait
    spares_.refill();
    if (members_.live() >= max_np) return;
    if (members_.free_slots(Clock::now()) == 0) return watch_cooldowns();
    slots_changed(SlotsChange::kAdded, "slots free again after a cooldown");
  });
}

// The policy says how a change of slots is taken in; none once the job is failing.
void ElasticMembers::slots_changed(SlotsChange change, const std::string& reason) {
  JobCore& core = parts_.core;
  if (core.outcome()) return;
  core.carry_out(parts_.policy.slots_changed(change, reason, core.facts()));
}

// The workers that are `members` of the next generation take their slots (rank, topology)
// there, also in their output's prefix.
void ElasticMembers::take_ranks(const std::vector<rdzv::Member>& members) {
  for (const auto& m : members) {
    WorkerRecord* record = parts_.workers.find(WorkerKey{m.worker});
    if (!record) continue;
    parts_.workers.set_slot(*record, m.slot);
    parts_.sink.set_rank(record->id, m.slot.rank);
  }
}

// Before take_ranks(): GenerationStart::survivors of the next generation's `members`.
std::map<std::string, Slot> ElasticMembers::named_survivors(
    const std::vector<rdzv::Member>& members) {
  std::map<std::string, Slot> out;
  for (const auto& m : members) {
    const WorkerRecord* record = parts_.workers.find(WorkerKey{m.worker});
    if (!record || record->slot().host.empty()) continue;  // a newcomer
    out[record->slot().host + ":" + std::to_string(record->slot().local_rank)] = m.slot;
  }
  return out;
}

// --exclude-stragglers: the host of a rank persistently the last to arrive cools down and the
// others re-form without it, if the policy takes it (--min-np workers remain, --reset-limit).
bool ElasticMembers::straggler_found(std::uint32_t key, const std::string& verdict) {
  WorkerTable& workers = parts_.workers;
  const WorkerRecord* straggler = workers.find(WorkerKey{key});
  if (straggler == nullptr || straggler->end()) return false;
  const std::size_t host = straggler->id.host;
  std::vector<WorkerId> on_host;
  workers.for_each([&](const WorkerRecord& r) {
    if (r.id.host == host && !r.end()) on_host.push_back(r.id);
  });
  const auto now = Clock::now();
  // Signed: the host's workers may include newcomers that are no members yet.
  const long left = static_cast<long>(members_.live()) - static_cast<long>(on_host.size()) +
                    static_cast<long>(members_.free_slots(now));
  StragglerFound found;
  found.verdict = verdict;
  found.reason = "straggler: " + found.verdict + " (--exclude-stragglers, margin " +
                 describe_duration(parts_.spec.elastic.straggler_margin) + ")";
  found.host = parts_.pools.host_name(host);
  found.left = left < 0 ? 0 : static_cast<std::size_t>(left);
  JobCore& core = parts_.core;
  const Action action = parts_.policy.straggler_found(found, core.facts());
  if (action.kind != Action::Kind::kReform) {
    core.carry_out(action);
    return false;
  }
  const std::string& reason = found.reason;
  parts_.generations.current().ended = now;
  parts_.generations.current().end_reason = reason;
  const auto cooldown = members_.cool_down(host, now);
  for (const WorkerId& id : on_host) {
    parts_.pools.signal(id, SIGKILL);
    drop(id);  // its end, when it comes, is ignored
  }
  parts_.control.happened("straggler excluded",
                          {{"host", parts_.pools.host_name(host)}, {"why", verdict}});
  note(reason + "; host " + parts_.pools.host_name(host) + " unused for " +
       std::to_string(cooldown.count()) + " s; re-forming with " +
       plural(members_.live(), "worker") + " (" + plural(on_host.size(), "worker") +
       " stopped there)");
  core.carry_out(action);
  return true;
}

void ElasticMembers::drop(const WorkerId& id) {
  members_.remove(parts_.workers.find(id)->key.value);
  parts_.workers.erase(id);
}

void ElasticMembers::stop() {
  elastic_timer_.cancel();
  cooldown_timer_.cancel();
  if (discovery_) discovery_->cancel();
}

}  // namespace hvdrun::launcher
