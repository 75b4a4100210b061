// Warm spares (job.h, --spares): workers of the job's program started on free slots beyond
// --max-np, parked in their join (libhvdrun's init(), HVDRUN_SPARE=1) in no generation. A
// re-formation takes them (ElasticMembership::fill) before it starts new workers, so a failed
// worker's place is filled without a cold start; a spare that dies is replaced (after a few in
// a row, no more are started); when the job ends they are told they are not needed.
#include <signal.h>

#include "launcher/job/job.h"
#include "launcher/output/logging.h"
#include "launcher/workers/worker_env.h"
#include "rendezvous/env_names.h"

namespace hvdrun::launcher {

void Job::refill_spares() {
  const auto want = static_cast<std::size_t>(spec_.elastic.spares);
  if (!membership_ || want == 0 || spare_ledger_.dismissed() || spare_ledger_.given_up() ||
      outcome_ || !state_.is(JobState::kRunning) || workers_.any_finished()) {
    return;
  }
  const auto now = Clock::now();
  const auto added = membership_->add_spares(now, want);
  next_key_ = membership_->next_key();
  std::vector<WorkerLaunch> launches;
  std::vector<WorkerId> ids;
  for (const auto& w : added) {
    Slot slot;
    slot.rank = -1;  // none until promoted (HOROVOD_RANK, RANK: -1)
    slot.host_index = w.id.host;
    slot.host = pools_.host_name(w.id.host);
    spares_.add(w.id, WorkerKey{w.key}, slot);
    faces_.add_spare(w.key);  // before it can join
    sink_.add_spare(w.id, w.key, slot.host);
    spare_ledger_.started(w.id, now);
    const WorkerRecord* rank0 = workers_.rank_zero();
    auto env =
        worker_environment(environment_, spec_, slot,
                           pools_.rendezvous_for(w.id.host, rank0 ? rank0->id.host : 0), w.key);
    env.push_back(std::string(env::kSpare) + "=1");
    launches.push_back({w.id, slot, std::move(env)});
    ids.push_back(w.id);
  }
  if (!launches.empty()) {
    pools_.start(std::move(launches));
    publish_started(&JobEvents::spares_started, spares_, ids);
    if (spec_.verbose) note("started " + plural(added.size(), "spare"));
  }
  if (membership_->spares() < want) {
    if (generations_.count() > 1) {  // after a failure: its host cools down, as said
      if (spec_.verbose) {
        note(std::to_string(membership_->spares()) + " of --spares " + std::to_string(want) +
             " wait; more start as slots free up");
      }
    } else if (spare_ledger_.first_shortfall(added.size())) {  // said once, at the first start
      note("warning: " + std::to_string(membership_->spares()) + " of --spares " +
           std::to_string(want) +
           " wait: no free slot beyond --max-np (spares need slots of their own; give the "
           "hosts more)");
    }
    watch_cooldowns();  // a host cooling down may have room when it ends
  }
}

void Job::promote_spare(const WorkerId& id) {
  WorkerRecord* spare = spares_.find(id);
  const WorkerKey key = spare->key;
  publish(&JobEvents::spare_promoted, worker_event(*spare));
  spares_.erase(id);
  workers_.add(id, key, Slot{}).from_spare = true;
  spare_ledger_.promoted(id, key.value, pools_.host_name(id.host), Clock::now());
}

void Job::spare_ended(WorkerRecord& spare) {
  const WorkerId id = spare.id;
  const std::uint32_t key = spare.key.value;
  publish(&JobEvents::worker_ended, worker_event(spare));
  membership_->remove(key);
  faces_.dismiss_spare(key, "spare ended");
  const std::string what = spare.lost.empty() ? spare.end()->what_happened() : spare.lost;
  const std::string who = "spare " + std::to_string(key) + " (host " + pools_.host_name(id.host) +
                          (spare.end()->pid ? ", pid " + std::to_string(spare.end()->pid) : "") +
                          ")";
  const bool expected = spare.removed || spare_ledger_.dismissed() || !state_.active() || outcome_;
  spares_.erase(id);
  if (expected) {
    spare_ledger_.gone(id);
    return maybe_finish();
  }
  happened("spare ended", {{"spare", who}, {"end", what}});
  // Its host does not cool down: a spare has no part in the training, and a program that
  // cannot wait as a spare would keep failed workers' replacements off every host. Spares that
  // keep ending are not started again.
  if (spare_ledger_.ended_while_waiting(id)) {
    note("warning: " + who + " " + what +
         " while it waited: " + std::to_string(spare_ledger_.deaths_in_a_row()) +
         " spares in a row ended so; no more spares are started (does the program wait in "
         "hvdrun::init() or hvd.init() before anything that needs a rank?)");
    return;
  }
  refill_spares();
  const bool refilled = membership_->spares() >= static_cast<std::size_t>(spec_.elastic.spares);
  note(who + " " + what + " while it waited; " +
       (refilled ? "another started" : "another starts when a slot is free"));
}

void Job::spare_lost(WorkerRecord& spare, const std::string& why) {
  if (spare.end()) return;
  spare.lost = "missed its heartbeats (" + why + "): killed";
  membership_->remove(spare.key.value);  // never promoted now, whenever its end comes
  faces_.dismiss_spare(spare.key.value, "spare lost");
  pools_.signal(spare.id, SIGKILL);
  if (pools_.connected(spare.id.host)) {  // a cut-off host may never report the end
    const WorkerId lost = spare.id;
    worker_exited(lost, ProcessEnd::lost_connection("host " + pools_.host_name(lost.host) +
                                                    " stopped answering"));
  }
}

void Job::drop_spares_of(std::size_t host) {
  spares_.for_each([&](WorkerRecord& r) {
    if (r.id.host != host || r.end()) return;
    r.removed = true;  // its end, when it comes, is expected
    membership_->remove(r.key.value);
    faces_.dismiss_spare(r.key.value, "spare not needed: its host was lost");
    pools_.signal(r.id, SIGKILL);
  });
}

void Job::check_horovod_spares() {
  if (!state_.active()) return;  // a restart or the end deals with every spare
  const auto limit = spec_.elastic.heartbeat_timeout.value_or(kDefaultHeartbeatTimeout);
  for (const std::uint32_t key : faces_.silent_horovod_spares(limit)) {
    WorkerRecord* spare = spares_.find(WorkerKey{key});
    if (spare && !spare->end() && !spare->removed) {
      spare_lost(*spare, "no query at hvdrun's Horovod rendezvous for " +
                             std::to_string(limit.count()) + " ms");
    }
  }
}

void Job::dismiss_spares() {
  if (!spare_ledger_.dismiss()) return;
  spares_.for_each([&](const WorkerRecord& r) {
    if (r.end()) return;
    spare_ledger_.not_needed();
    faces_.dismiss_spare(r.key.value, "spare not needed: the job is ending");
  });
}

}  // namespace hvdrun::launcher
