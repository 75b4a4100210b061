// The four policies (policies.h) and the choice among them (policy.h).
#include "launcher/policy/policies.h"

#include <utility>

namespace hvdrun::launcher {
namespace {

Action continue_job() {
  return {};
}

Action fail_job() {
  Action action;
  action.kind = Action::Kind::kFailJob;
  return action;
}

Action reform(rdzv::Handover how, std::string reason, std::string note = {}) {
  Action action;
  action.kind = Action::Kind::kReform;
  action.how = how;
  action.reason = std::move(reason);
  action.note = std::move(note);
  return action;
}

// A job whose workers have begun to finish takes no new slots, unless it waits for slots to
// go on at all.
bool takes_no_new_slots(SlotsChange change, const JobFacts& facts) {
  return change == SlotsChange::kAdded && facts.winding_down && !facts.waiting_for_slots;
}

Action start_without_host(std::size_t remaining, std::optional<int> min_np) {
  if (min_np && remaining >= static_cast<std::size_t>(*min_np)) return continue_job();
  return fail_job();
}

}  // namespace

Action Policy::host_unusable_at_start(std::size_t /*remaining*/) const {
  return fail_job();
}

Action Policy::slots_changed(SlotsChange /*change*/, const std::string& /*reason*/,
                             const JobFacts& /*facts*/) {
  return continue_job();
}

Action Policy::limit_reached(Limit /*limit*/, const std::string& reason,
                             const JobFacts& /*facts*/) {
  Action action = fail_job();
  action.reason = reason;
  return action;
}

Action Policy::straggler_found(const StragglerFound& /*found*/, const JobFacts& /*facts*/) {
  return continue_job();
}

Action Policy::reform_asked(std::size_t /*waiting*/, const JobFacts& /*facts*/) {
  return continue_job();
}

std::string Policy::horovod_in_use(const std::string& /*peer*/) {
  return {};
}

Action FailFastPolicy::worker_ended(const WorkerEnded& ended, const JobFacts& /*facts*/) {
  if (ended.slot_removed || ended.end.success()) return continue_job();
  return fail_job();
}

Action RestartAllPolicy::worker_ended(const WorkerEnded& ended, const JobFacts& /*facts*/) {
  if (ended.slot_removed || ended.end.success()) return continue_job();
  if (restarts_ >= max_restarts_) return fail_job();
  ++restarts_;
  Action action;
  action.kind = Action::Kind::kRestartAll;
  action.counted = true;
  return action;
}

Action RestartAllPolicy::host_unusable_at_start(std::size_t remaining) const {
  return start_without_host(remaining, min_np_);
}

// Fresh workers take the change in: a restart (not counted) while the job runs; the next
// generation at once while it waits for slots with no worker left (one that still has workers
// waits for --min-np to be reached by them).
Action RestartAllPolicy::slots_changed(SlotsChange change, const std::string& reason,
                                       const JobFacts& facts) {
  if (takes_no_new_slots(change, facts)) return continue_job();
  if (facts.waiting_for_slots) {
    return facts.live == 0 ? reform(rdzv::Handover::kRestart, reason) : continue_job();
  }
  Action action;
  action.kind = Action::Kind::kRestartAll;
  action.reason = reason;
  return action;
}

std::string RestartAllPolicy::exhausted() const {
  return "no restart left: --max-restarts " + std::to_string(max_restarts_) + " used";
}

Action ElasticPolicy::worker_ended(const WorkerEnded& ended, const JobFacts& facts) {
  if (ended.slot_removed) return continue_job();
  if (ended.end.success()) {
    if (facts.members_running > 0 || (facts.newcomers_running == 0 && !facts.waiting_for_slots)) {
      return continue_job();
    }
    Action action;
    action.kind = Action::Kind::kFinishJob;
    action.note = "every worker that took part in the training exited 0";
    if (facts.newcomers_running > 0) {
      action.note +=
          ": the job is done; stopping " + std::to_string(facts.newcomers_running) +
          (facts.newcomers_running == 1 ? " newcomer, which is" : " newcomers, which are") +
          " not needed";
    } else {
      action.note += ": the job is done; no longer waiting for slots";
    }
    return action;
  }
  if (!take_reset()) return fail_job();
  return reform(rdzv::Handover::kBroken, {});
}

Action ElasticPolicy::host_unusable_at_start(std::size_t remaining) const {
  return start_without_host(remaining, min_np_);
}

// While waiting for slots the running generation is already broken: its survivors wait for a
// push; otherwise they take the change in at their next commit.
Action ElasticPolicy::slots_changed(SlotsChange change, const std::string& reason,
                                    const JobFacts& facts) {
  if (takes_no_new_slots(change, facts)) return continue_job();
  return reform(facts.waiting_for_slots ? rdzv::Handover::kBroken : rdzv::Handover::kHostsUpdated,
                reason);
}

// A straggler's host leaves only if --min-np workers remain and --reset-limit allows one more
// re-formation; otherwise it stays, which is said once.
Action ElasticPolicy::straggler_found(const StragglerFound& found, const JobFacts& /*facts*/) {
  std::string why;
  if (found.left < static_cast<std::size_t>(min_np_)) {
    why = "without it fewer than --min-np " + std::to_string(min_np_) + " workers would be left";
  } else if (!take_reset()) {
    why = exhausted();
  } else {
    return reform(rdzv::Handover::kBroken, found.reason);
  }
  Action action = continue_job();
  if (!std::exchange(straggler_kept_said_, true)) {
    action.note = "straggler: " + found.verdict + "; host " + found.host + " stays: " + why;
  }
  return action;
}

std::string ElasticPolicy::exhausted() const {
  return reset_limit_
             ? "no re-formation left: --reset-limit " + std::to_string(*reset_limit_) + " used"
             : std::string();
}

// A removed slot's worker that dies before the others took the removal in broke their
// collectives: they re-form now, as after a failure, without blame.
Action HorovodElasticPolicy::worker_ended(const WorkerEnded& ended, const JobFacts& facts) {
  if (ended.slot_removed && in_use_ && facts.host_update_pending) {
    return reform(rdzv::Handover::kHostsUpdated, facts.host_update_reason);
  }
  // Horovod's workers form their generations through Horovod's rendezvous, which does not
  // tell when a newcomer has joined the others: one may still be finishing its training.
  if (in_use_ && ended.end.success() && !facts.waiting_for_slots) return continue_job();
  return ElasticPolicy::worker_ended(ended, facts);
}

// Horovod workers take a change in when rank 0 is told of it: they then ask for their places
// (reform_asked()). A generation that ends a wait for slots is formed at once (its survivors
// already ask).
Action HorovodElasticPolicy::slots_changed(SlotsChange change, const std::string& reason,
                                           const JobFacts& facts) {
  if (!in_use_ || facts.waiting_for_slots)
    return ElasticPolicy::slots_changed(change, reason, facts);
  if (takes_no_new_slots(change, facts)) return continue_job();
  Action action;
  action.kind = Action::Kind::kNotifyRankZero;
  action.change = change;
  action.reason = reason;
  return action;
}

// After a host change they were told of, the next generation takes it in; otherwise a
// collective failed (a Gloo timeout, a broken connection) and the same workers re-form, as
// horovodrun's do, counted against --reset-limit. A member that does not ask yet (it has not
// registered; or it died before it did, and its exit re-forms the job) is waited for.
Action HorovodElasticPolicy::reform_asked(std::size_t waiting, const JobFacts& facts) {
  if (facts.waiting_for_slots || waiting < facts.live) return continue_job();
  const std::string asked = "every Horovod worker (" + std::to_string(waiting) + ")";
  if (facts.host_update_pending) {
    return reform(rdzv::Handover::kHostsUpdated, facts.host_update_reason,
                  asked + " asked for its place after the host change; re-forming");
  }
  const std::string reason = asked + " asked to re-form, though none exited: a collective failed";
  if (!take_reset()) {
    Action action = fail_job();
    action.reason = reason + " (" + exhausted() + ")";
    return action;
  }
  return reform(rdzv::Handover::kBroken, reason, reason + "; re-forming with the same workers");
}

std::string HorovodElasticPolicy::horovod_in_use(const std::string& peer) {
  if (in_use_) return {};
  in_use_ = true;
  return "a worker stored a key in Horovod's rendezvous (from " + peer +
         "): the job runs Horovod; its workers re-form after a failure, and host changes are "
         "sent to its rank 0, to be taken in at the next state.commit()";
}

std::unique_ptr<Policy> make_policy(const JobSpec& spec) {
  const std::optional<int> min_np = spec.elastic_job() ? spec.elastic.min_np : std::optional<int>();
  if (spec.max_restarts > 0) return std::make_unique<RestartAllPolicy>(spec.max_restarts, min_np);
  if (spec.survivors_reform()) {
    return std::make_unique<HorovodElasticPolicy>(spec.elastic.reset_limit, min_np.value_or(1));
  }
  return std::make_unique<FailFastPolicy>();
}

}  // namespace hvdrun::launcher
