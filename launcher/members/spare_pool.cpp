// Warm spares (spare_pool.h).
#include "launcher/members/spare_pool.h"

#include <signal.h>

#include "launcher/output/logging.h"
#include "launcher/workers/worker_env.h"
#include "rendezvous/env_names.h"

namespace hvdrun::launcher {

void SparePool::refill() {
  const auto want = static_cast<std::size_t>(parts_.spec.elastic.spares);
  const JobCore& core = parts_.core;
  if (want == 0 || ledger_.dismissed() || ledger_.given_up() || core.outcome() ||
      !core.lifecycle().is(JobState::kRunning) || parts_.workers.any_finished()) {
    return;
  }
  const auto now = ElasticMembership::Clock::now();
  const auto added = membership_.add_spares(now, want);
  std::vector<WorkerLaunch> launches;
  std::vector<WorkerId> ids;
  for (const auto& w : added) {
    Slot slot;
    slot.rank = -1;  // none until promoted (HOROVOD_RANK, RANK: -1)
    slot.host_index = w.id.host;
    slot.host = parts_.pools.host_name(w.id.host);
    table_.add(w.id, WorkerKey{w.key}, slot);
    parts_.faces.add_spare(w.key);  // before it can join
    parts_.sink.add_spare(w.id, w.key, slot.host);
    ledger_.started(w.id, now);
    const WorkerRecord* rank0 = parts_.workers.rank_zero();
    auto env = worker_environment(
        parts_.environment, parts_.spec, slot,
        parts_.pools.rendezvous_for(w.id.host, rank0 ? rank0->id.host : 0), w.key);
    env.push_back(std::string(env::kSpare) + "=1");
    launches.push_back({w.id, slot, std::move(env)});
    ids.push_back(w.id);
  }
  if (!launches.empty()) {
    parts_.pools.start(std::move(launches));
    parts_.publisher.started(&JobEvents::spares_started, table_, ids);
    if (parts_.spec.verbose) note("started " + plural(added.size(), "spare"));
  }
  if (membership_.spares() >= want) return;
  if (parts_.generations.count() > 1) {  // after a failure: its host cools down, as said
    if (parts_.spec.verbose) {
      note(std::to_string(membership_.spares()) + " of --spares " + std::to_string(want) +
           " wait; more start as slots free up");
    }
  } else if (ledger_.first_shortfall(added.size())) {  // said once, at the first start
    note("warning: " + std::to_string(membership_.spares()) + " of --spares " +
         std::to_string(want) +
         " wait: no free slot beyond --max-np (spares need slots of their own; give the "
         "hosts more)");
  }
  short_of_slots_();  // a host cooling down may have room when it ends
}

void SparePool::promote(const WorkerId& id) {
  WorkerRecord* spare = table_.find(id);
  const WorkerKey key = spare->key;
  parts_.publisher.worker(&JobEvents::spare_promoted, *spare);
  table_.erase(id);
  parts_.workers.add(id, key, Slot{}).from_spare = true;
  ledger_.promoted(id, key.value, parts_.pools.host_name(id.host), ElasticMembership::Clock::now());
}

bool SparePool::exited(const WorkerId& id, ProcessEnd end) {
  WorkerRecord* spare = table_.find(id);
  if (!spare) return false;
  if (spare->end()) return true;
  table_.set_end(*spare, std::move(end));
  ended(*spare);
  return true;
}

void SparePool::ended(WorkerRecord& spare) {
  const WorkerId id = spare.id;
  const std::uint32_t key = spare.key.value;
  parts_.publisher.worker(&JobEvents::worker_ended, spare);
  membership_.remove(key);
  parts_.faces.dismiss_spare(key, "spare ended");
  const std::string what = spare.lost.empty() ? spare.end()->what_happened() : spare.lost;
  const std::string who =
      "spare " + std::to_string(key) + " (host " + parts_.pools.host_name(id.host) +
      (spare.end()->pid ? ", pid " + std::to_string(spare.end()->pid) : "") + ")";
  JobCore& core = parts_.core;
  const bool expected =
      spare.removed || ledger_.dismissed() || !core.lifecycle().active() || core.outcome();
  table_.erase(id);
  if (expected) {
    ledger_.gone(id);
    return core.maybe_finish();
  }
  parts_.control.happened("spare ended", {{"spare", who}, {"end", what}});
  // Its host does not cool down: a spare has no part in the training, and a program that
  // cannot wait as a spare would keep failed workers' replacements off every host. Spares that
  // keep ending are not started again.
  if (ledger_.ended_while_waiting(id)) {
    note("warning: " + who + " " + what +
         " while it waited: " + std::to_string(ledger_.deaths_in_a_row()) +
         " spares in a row ended so; no more spares are started (does the program wait in "
         "hvdrun::init() or hvd.init() before anything that needs a rank?)");
    return;
  }
  refill();
  const bool refilled =
      membership_.spares() >= static_cast<std::size_t>(parts_.spec.elastic.spares);
  note(who + " " + what + " while it waited; " +
       (refilled ? "another started" : "another starts when a slot is free"));
}

void SparePool::parked(std::uint32_t key) {
  const WorkerRecord* spare = table_.find(WorkerKey{key});
  if (!spare || spare->end() || !parked_.insert(key).second) return;
  const std::string& host = parts_.pools.host_name(spare->id.host);
  parts_.control.happened("spare waiting", {{"spare", std::to_string(key)}, {"host", host}});
  if (parts_.spec.verbose) note("spare " + std::to_string(key) + " (host " + host + ") waits");
}

bool SparePool::lost(std::uint32_t key, const std::string& why) {
  WorkerRecord* spare = table_.find(WorkerKey{key});
  if (!spare) return false;
  if (spare->end()) return true;
  spare->lost = "missed its heartbeats (" + why + "): killed";
  membership_.remove(key);  // never promoted now, whenever its end comes
  parts_.faces.dismiss_spare(key, "spare lost");
  parts_.pools.signal(spare->id, SIGKILL);
  if (parts_.pools.connected(spare->id.host)) {  // a cut-off host may never report the end
    const WorkerId id = spare->id;
    exited(id, ProcessEnd::lost_connection("host " + parts_.pools.host_name(id.host) +
                                           " stopped answering"));
  }
  return true;
}

void SparePool::drop_host(std::size_t host) {
  table_.for_each([&](WorkerRecord& r) {
    if (r.id.host != host || r.end()) return;
    r.removed = true;  // its end, when it comes, is expected
    membership_.remove(r.key.value);
    parts_.faces.dismiss_spare(r.key.value, "spare not needed: its host was lost");
    parts_.pools.signal(r.id, SIGKILL);
  });
}

void SparePool::slot_removed(std::uint32_t key) {
  if (WorkerRecord* spare = table_.find(WorkerKey{key})) spare->removed = true;
  parts_.faces.dismiss_spare(key, "spare not needed: its slot left the job");
}

void SparePool::check_horovod() {
  if (table_.running() == 0 || !parts_.core.lifecycle().active()) {
    return;  // a restart or the end deals with every spare
  }
  const auto limit = parts_.spec.elastic.heartbeat_timeout.value_or(kDefaultHeartbeatTimeout);
  for (const std::uint32_t key : parts_.faces.silent_horovod_spares(limit)) {
    const WorkerRecord* spare = table_.find(WorkerKey{key});
    if (spare && !spare->end() && !spare->removed) {
      lost(key,
           "no query at hvdrun's Horovod rendezvous for " + std::to_string(limit.count()) + " ms");
    }
  }
}

void SparePool::dismiss() {
  if (!ledger_.dismiss()) return;
  table_.for_each([&](const WorkerRecord& r) {
    if (r.end()) return;
    ledger_.not_needed();
    parts_.faces.dismiss_spare(r.key.value, "spare not needed: the job is ending");
  });
}

}  // namespace hvdrun::launcher
