// The job's next generations (job.h): a restart of every worker, and an elastic job's
// re-formations, waits for slots and growth after a cooldown.
#include <signal.h>

#include <limits>
#include <set>
#include <vector>

#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

std::uint16_t Job::start_generation(GenerationStart start) {
  const std::uint16_t port = faces_.start_generation(std::move(start));
  pools_.rendezvous().master_port = port;
  return port;
}

// A restart was chosen: the generation ends, every worker is stopped, and maybe_finish()
// starts the next generation once all have ended. In an elastic job, a host that failed as a
// host (lost, unresponsive, could not start the worker) cools down first; a program that
// failed there does not make its host suspect.
void Job::restart(const WorkerRecord& failed) {
  const ProcessEnd& end = *failed.end();
  const std::string what = failed.lost.empty() ? end.what_happened() : failed.lost;
  generations_.current().end_reason = failed.who() + " " + what;
  const std::size_t others = running();
  std::string cooled;
  if (membership_ && (!failed.lost.empty() || !end.ran())) {
    const auto cooldown = membership_->cool_down(failed.id.host, Clock::now());
    cooled = "; host " + pools_.host_name(failed.id.host) + " unused for " +
             std::to_string(cooldown.count()) + " s";
  }
  happened("restart", {{"why", failed.who() + " " + what}});
  note(failed.who() + " " + what + cooled + "; restarting every rank (restart " +
       std::to_string(policy_->survived()) + " of " + std::to_string(spec_.max_restarts) + ")" +
       (others ? ": terminating " + plural(others, "other rank") : ""));
  enter(JobState::kRestarting);
}

// A change of slots restarts every worker (not counted as a restart) to take it in.
void Job::restart_for(const std::string& reason) {
  generations_.current().end_reason = reason;
  note(reason +
       ": restarting every rank to take the change in (not counted against "
       "--max-restarts); terminating " +
       plural(running(), "rank"));
  enter(JobState::kRestarting);
}

// Every worker of the generation has ended: the same slots start again as new incarnations,
// with a new rendezvous generation and MASTER_PORT. In an elastic job, the next generation
// takes every slot available now, up to --max-np (waiting for --min-np if need be).
void Job::start_next_generation() {
  generations_.current().ended = Clock::now();
  pools_.rendezvous().restart_count = policy_->restart_count(generations_.count());
  if (membership_) {
    workers_.for_each([&](const WorkerRecord& r) { membership_->remove(r.key.value); });
    workers_.clear();
    enter(JobState::kRunning);
    reform(rdzv::Handover::kRestart, generations_.current().end_reason);
    if (discovery_) discovery_->poll();
    return;
  }
  WorkerTable next;
  std::vector<rdzv::Member> members;
  workers_.for_each([&](const WorkerRecord& r) {
    const WorkerId incarnation{r.id.host, r.id.slot, r.id.incarnation + 1};
    sink_.add_worker(incarnation, r.slot().rank, r.slot().host);
    // A fresh key: a late process of the old generation is no member of the new one.
    next.add(incarnation, WorkerKey{next_key_}, r.slot());
    members.push_back({next_key_++, r.slot()});
  });
  workers_ = std::move(next);
  std::sort(members.begin(), members.end(),
            [](const rdzv::Member& a, const rdzv::Member& b) { return a.slot.rank < b.slot.rank; });
  const std::size_t size = members.size();
  start_generation(
      {std::move(members), rdzv::Handover::kRestart, generations_.current().end_reason, {}});
  publisher_.generation_ended();
  generations_.begin(Clock::now(), size);
  start_workers();
}

// Elastic jobs: the failed worker is dropped, its host cools down, the survivors re-form. A
// host lost as a whole (its agent or link gone: the pool reported a lost connection) takes
// every worker it still ran into the same re-formation: one failure of the host, one cooldown.
void Job::drop_and_reform(WorkerId id) {
  const WorkerRecord& record = *workers_.find(id);
  const std::string name = record.who();
  const std::string what = record.lost.empty() ? record.end()->what_happened() : record.lost;
  const bool host_lost =
      record.lost.empty() && record.end()->kind == ProcessEnd::Kind::kLostConnection;
  const auto now = Clock::now();
  generations_.current().ended = now;
  generations_.current().end_reason = name + " " + what;
  membership_->remove(record.key.value);
  const auto cooldown = membership_->cool_down(id.host, now);
  workers_.erase(id);
  std::vector<WorkerId> with_host;
  if (host_lost) {
    workers_.for_each([&](const WorkerRecord& r) {
      if (r.id.host == id.host && !r.end()) with_host.push_back(r.id);
    });
  }
  for (const WorkerId& other : with_host) {
    membership_->remove(workers_.find(other)->key.value);
    pools_.signal(other, SIGKILL);
    workers_.erase(other);  // its own report of the loss, when it comes, is ignored
  }
  if (host_lost) spares_.drop_host(id.host);  // lost with it: none of them is promoted
  const std::string others =
      with_host.empty() ? std::string()
                        : " (and with it " + plural(with_host.size(), "other worker") + ")";
  note(name + " " + what + others + "; host " + pools_.host_name(id.host) + " unused for " +
       std::to_string(cooldown.count()) + " s; re-forming with " +
       plural(membership_->live(), "surviving worker"));
  reform(rdzv::Handover::kBroken, name + " " + what);
}

// A new generation of the members plus replacements on free slots, if at least --min-np can
// take part; else the wait for slots (bounded by --elastic-timeout).
void Job::reform(rdzv::Handover how, const std::string& reason) {
  if (!state_.active()) return;
  const auto now = Clock::now();
  const std::size_t min_np = static_cast<std::size_t>(*spec_.elastic.min_np);
  if (membership_->live() + membership_->free_slots(now) < min_np) return wait_for_slots(reason);
  if (state_.is(JobState::kWaitingForSlots)) enter(JobState::kRunning);
  // A job whose workers have begun to finish starts new ones only to keep its survivors at
  // --min-np (a newcomer gets their state): one beyond, or one with no survivor to learn
  // from, would run the training again.
  const std::size_t limit = !workers_.any_finished()  ? std::numeric_limits<std::size_t>::max()
                            : membership_->live() > 0 ? min_np
                                                      : 0;
  std::vector<WorkerId> added, started;
  std::set<WorkerId> promoted;  // spares: they run already
  for (const auto& w : membership_->fill(now, limit)) {
    added.push_back(w.id);
    if (w.promoted) {
      spares_.promote(w.id);
      promoted.insert(w.id);
      continue;
    }
    started.push_back(w.id);
    workers_.add(w.id, WorkerKey{w.key}, Slot{});
  }
  auto members = membership_->next_generation();
  auto survivors = named_survivors(members);
  name_spares(members, promoted, survivors);
  take_ranks(members);
  const bool joins_survivors = added.size() < members.size();
  for (const auto& id : added) {
    WorkerRecord& record = *workers_.find(id);
    if (promoted.contains(id)) {
      sink_.set_rank(id, record.slot().rank);
      workers_.name_for_horovod(record);  // what it registers under once promoted
    } else {
      sink_.add_worker(id, record.slot().rank, record.slot().host);
    }
    if (joins_survivors) workers_.set_newcomer(record);  // they trained before it
  }
  const std::size_t size = members.size();
  generations_.end(now, reason);  // hosts updated: the running generation ends here
  pools_.rendezvous().size = static_cast<int>(size);
  start_generation({std::move(members), how, reason, std::move(survivors)});
  if (host_updates_) host_updates_->reformed();  // this generation takes every change in
  publisher_.generation_ended();
  generations_.begin(now, size);
  note_generation(how, size, added.size(), promoted.size());
  launch_workers(started);
  spares_.refill();
  watch_cooldowns();
}

// A promoted Horovod spare asks for its place under its spare name; so does one promoted before
// that has not registered yet.
void Job::name_spares(const std::vector<rdzv::Member>& members, const std::set<WorkerId>& promoted,
                      std::map<std::string, Slot>& survivors) {
  for (const auto& m : members) {
    const WorkerRecord* record = workers_.find(WorkerKey{m.worker});
    if (record &&
        (promoted.contains(record->id) || (record->from_spare && !record->horovod_registered))) {
      survivors[horovod_spare_name(m.worker)] = m.slot;
    }
  }
}

void Job::note_generation(rdzv::Handover how, std::size_t size, std::size_t added,
                          std::size_t promoted) {
  const std::string generation = "generation " + std::to_string(generations_.number()) + ": ";
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

void Job::wait_for_slots(const std::string& reason) {
  watch_cooldowns();
  if (state_.is(JobState::kWaitingForSlots)) return;
  enter(JobState::kWaitingForSlots);
  const auto timeout = spec_.elastic.timeout;
  const std::size_t free = membership_->free_slots(Clock::now());
  note("below --min-np " + std::to_string(*spec_.elastic.min_np) + ": " +
       plural(membership_->live(), "worker") + " left and " +
       (free == 0 ? std::string("no free slot") : plural(free, "free slot")) + "; waiting up to " +
       std::to_string(timeout.count()) + " s (--elastic-timeout) for slots");
  elastic_timer_.expires_after(timeout);
  elastic_timer_.async_wait([this, timeout, reason](const boost::system::error_code& ec) {
    if (ec || !state_.is(JobState::kWaitingForSlots)) return;
    if (!outcome_) {
      const std::string text = "only " + plural(membership_->live(), "worker") + " for " +
                               std::to_string(timeout.count()) +
                               " s (--elastic-timeout), below --min-np " +
                               std::to_string(*spec_.elastic.min_np) + " (after " + reason + ")";
      carry_out(policy_->limit_reached(Limit::kElasticTimeout, text, facts()), nullptr);
    }
    terminate();
    maybe_finish();
  });
}

// At the next cooldown end: grow back towards --max-np (or end a wait for slots).
void Job::watch_cooldowns() {
  const auto end = membership_->next_cooldown_end();
  const bool spares_short = membership_->spares() < static_cast<std::size_t>(spec_.elastic.spares);
  if (!end ||
      (membership_->live() >= static_cast<std::size_t>(*spec_.elastic.max_np) && !spares_short)) {
    return;
  }
  cooldown_timer_.expires_at(*end);
  cooldown_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !state_.active()) return;
    membership_->end_cooldowns(Clock::now());  // the ones after this moment get a new wait
    spares_.refill();
    if (membership_->live() >= static_cast<std::size_t>(*spec_.elastic.max_np)) return;
    if (membership_->free_slots(Clock::now()) == 0) return watch_cooldowns();
    slots_changed(SlotsChange::kAdded, "slots free again after a cooldown");
  });
}

// The policy says how a change of slots is taken in; none once the job is failing.
void Job::slots_changed(SlotsChange change, const std::string& reason) {
  if (outcome_) return;
  carry_out(policy_->slots_changed(change, reason, facts()), nullptr);
}

// The workers that are `members` of the next generation take their slots (rank, topology)
// there, also in their output's prefix.
void Job::take_ranks(const std::vector<rdzv::Member>& members) {
  for (const auto& m : members) {
    WorkerRecord* record = workers_.find(WorkerKey{m.worker});
    if (!record) continue;
    workers_.set_slot(*record, m.slot);
    sink_.set_rank(record->id, m.slot.rank);
  }
}

// Before take_ranks(): GenerationStart::survivors of the next generation's `members`.
std::map<std::string, Slot> Job::named_survivors(const std::vector<rdzv::Member>& members) {
  std::map<std::string, Slot> out;
  for (const auto& m : members) {
    const WorkerRecord* record = workers_.find(WorkerKey{m.worker});
    if (!record || record->slot().host.empty()) continue;  // a newcomer
    out[record->slot().host + ":" + std::to_string(record->slot().local_rank)] = m.slot;
  }
  return out;
}

}  // namespace hvdrun::launcher
