// The policies: which worker ends take a job down, restart it or re-form it, the limit named
// when one ends it, and each policy's answer to every other event on a table of cases.
#include <gtest/gtest.h>
#include <signal.h>

#include <vector>

#include "launcher/policy/policies.h"

namespace hvdrun::launcher {
namespace {

using Kind = Action::Kind;

Kind on_end(Policy& policy, ProcessEnd end, const JobFacts& facts = {}) {
  return policy.worker_ended({WorkerId{0, 1, 0}, std::move(end), false}, facts).kind;
}

TEST(FailFastPolicy, OnlyASuccessfulEndLetsTheJobGoOn) {
  FailFastPolicy policy;
  EXPECT_EQ(on_end(policy, {ProcessEnd::Kind::kExited, 0, {}}), Kind::kContinue);
  EXPECT_EQ(on_end(policy, {ProcessEnd::Kind::kExited, 3, {}}), Kind::kFailJob);
  EXPECT_EQ(on_end(policy, {ProcessEnd::Kind::kSignaled, SIGKILL, {}}), Kind::kFailJob);
  EXPECT_EQ(on_end(policy, ProcessEnd::lost_connection("lost connection")), Kind::kFailJob);
}

TEST(RestartAllPolicy, FailuresRestartUntilTheLimitThenFailTheJob) {
  RestartAllPolicy policy(2);
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(0)), Kind::kContinue);
  const Action first = policy.worker_ended({WorkerId{0, 1, 0}, ProcessEnd::exited(3), false}, {});
  EXPECT_EQ(first.kind, Kind::kRestartAll);
  EXPECT_TRUE(first.counted);
  EXPECT_EQ(on_end(policy, ProcessEnd::signaled(SIGKILL)), Kind::kRestartAll);
  EXPECT_EQ(policy.restarts(), 2);
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(3)), Kind::kFailJob);
  EXPECT_EQ(policy.restarts(), 2);
  EXPECT_EQ(policy.exhausted(), "no restart left: --max-restarts 2 used");
  EXPECT_EQ(policy.restart_count(7), 2);  // TORCHELASTIC_RESTART_COUNT counts restarts
}

TEST(ElasticPolicy, FailuresReFormUntilTheResetLimitThenFailTheJob) {
  ElasticPolicy policy(1, 1);
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(0)), Kind::kContinue);
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(3)), Kind::kReform);
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(3)), Kind::kFailJob);
  EXPECT_EQ(policy.exhausted(), "no re-formation left: --reset-limit 1 used");
  EXPECT_EQ(policy.survived(), 1);
  ElasticPolicy none(0, 1);  // the first failure ends the job, and says why
  EXPECT_EQ(on_end(none, ProcessEnd::exited(3)), Kind::kFailJob);
  EXPECT_EQ(none.exhausted(), "no re-formation left: --reset-limit 0 used");
  EXPECT_EQ(none.survived(), 0);
  ElasticPolicy unlimited(std::nullopt, 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(on_end(unlimited, ProcessEnd::exited(3)), Kind::kReform);
  EXPECT_EQ(unlimited.exhausted(), "");
  EXPECT_EQ(FailFastPolicy().exhausted(), "");
  EXPECT_EQ(unlimited.restart_count(4), 4);  // the generations so far
}

// A straggler's exclusion is a re-formation like a failure's: it takes one of --reset-limit's,
// and none is taken when the limit is used or too few would be left (the straggler stays,
// said once).
TEST(ElasticPolicy, AStragglerExclusionCountsAgainstTheResetLimit) {
  StragglerFound found{"rank 2 (host h2) arrived last", "straggler: rank 2 (host h2) arrived last",
                       "h2", 2};
  ElasticPolicy policy(1, 2);
  const Action excluded = policy.straggler_found(found, {});
  EXPECT_EQ(excluded.kind, Kind::kReform);
  EXPECT_EQ(excluded.reason, found.reason);
  EXPECT_EQ(policy.resets(), 1);
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(3)), Kind::kFailJob);  // the limit is used
  const Action kept = policy.straggler_found(found, {});
  EXPECT_EQ(kept.kind, Kind::kContinue);
  EXPECT_EQ(kept.note,
            "straggler: rank 2 (host h2) arrived last; host h2 stays: no re-formation left: "
            "--reset-limit 1 used");
  EXPECT_EQ(policy.straggler_found(found, {}).note, "");  // said once

  ElasticPolicy few(std::nullopt, 3);
  const Action stays = few.straggler_found(found, {});
  EXPECT_EQ(stays.kind, Kind::kContinue);
  EXPECT_EQ(stays.note,
            "straggler: rank 2 (host h2) arrived last; host h2 stays: without it fewer than "
            "--min-np 3 workers would be left");
  EXPECT_EQ(few.resets(), 0);
  EXPECT_EQ(FailFastPolicy().straggler_found(found, {}).kind, Kind::kContinue);
}

// A limit of the job's own (--stall-shutdown, --elastic-timeout) fails every kind of job, for
// the reason the job gives.
TEST(Policies, ALimitOfTheJobsOwnFailsTheJobForItsReason) {
  FailFastPolicy fail_fast;
  RestartAllPolicy restart_all(3);
  ElasticPolicy elastic(std::nullopt, 1);
  HorovodElasticPolicy horovod(std::nullopt, 1);
  for (Policy* policy : std::vector<Policy*>{&fail_fast, &restart_all, &elastic, &horovod}) {
    for (const Limit limit : {Limit::kStallShutdown, Limit::kElasticTimeout}) {
      const Action action = policy->limit_reached(limit, "stalled: rank 1", {});
      EXPECT_EQ(action.kind, Kind::kFailJob);
      EXPECT_EQ(action.reason, "stalled: rank 1");
    }
  }
  EXPECT_EQ(restart_all.restarts(), 0);  // no restart taken for it
}

TEST(Policies, AWorkerWhoseSlotWasRemovedLeavesWithoutDecidingAnything) {
  FailFastPolicy fail_fast;
  RestartAllPolicy restart_all(1);
  ElasticPolicy elastic(0, 1);
  HorovodElasticPolicy horovod(0, 1);
  const WorkerEnded removed{WorkerId{1, 0, 0}, ProcessEnd::signaled(SIGKILL), true};
  for (Policy* policy : std::vector<Policy*>{&fail_fast, &restart_all, &elastic, &horovod}) {
    EXPECT_EQ(policy->worker_ended(removed, {}).kind, Kind::kContinue);
    EXPECT_EQ(policy->survived(), 0);
  }
}

TEST(Policies, AHostUnusableAtTheStartIsLeftOutOnlyWhileMinNpRemain) {
  struct Case {
    const Policy* policy;
    std::size_t remaining;
    Kind expected;
  };
  const FailFastPolicy fail_fast;
  const RestartAllPolicy static_restarts(2);
  const RestartAllPolicy elastic_restarts(2, 3);
  const ElasticPolicy elastic(std::nullopt, 3);
  const HorovodElasticPolicy horovod(std::nullopt, 3);
  const std::vector<Case> cases = {
      {&fail_fast, 100, Kind::kFailJob},       {&static_restarts, 100, Kind::kFailJob},
      {&elastic_restarts, 3, Kind::kContinue}, {&elastic_restarts, 2, Kind::kFailJob},
      {&elastic, 3, Kind::kContinue},          {&elastic, 2, Kind::kFailJob},
      {&horovod, 4, Kind::kContinue},          {&horovod, 0, Kind::kFailJob},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.policy->host_unusable_at_start(c.remaining).kind, c.expected)
        << "remaining " << c.remaining;
  }
}

struct SlotsCase {
  SlotsChange change;
  JobFacts facts;
  Kind kind;
  rdzv::Handover how = rdzv::Handover::kBroken;  // for kReform
};

JobFacts facts(std::size_t live, bool waiting, bool winding_down) {
  JobFacts f;
  f.live = live;
  f.waiting_for_slots = waiting;
  f.winding_down = winding_down;
  return f;
}

void expect_slots(Policy& policy, const std::vector<SlotsCase>& cases) {
  for (const auto& c : cases) {
    const Action action = policy.slots_changed(c.change, "why", c.facts);
    EXPECT_EQ(action.kind, c.kind)
        << "live " << c.facts.live << " waiting " << c.facts.waiting_for_slots << " winding down "
        << c.facts.winding_down;
    if (action.kind == Kind::kReform) {
      EXPECT_EQ(action.how, c.how);
    }
    if (action.kind != Kind::kContinue) {
      EXPECT_EQ(action.reason, "why");
    }
  }
}

TEST(ElasticPolicy, SlotChangesReFormAtTheNextCommitOrAtOnceWhileWaiting) {
  ElasticPolicy policy(std::nullopt, 2);
  expect_slots(
      policy,
      {
          {SlotsChange::kAdded, facts(3, false, false), Kind::kReform,
           rdzv::Handover::kHostsUpdated},
          {SlotsChange::kAdded, facts(1, true, false), Kind::kReform, rdzv::Handover::kBroken},
          // Finishing workers take no new slots, unless the job waits for them.
          {SlotsChange::kAdded, facts(3, false, true), Kind::kContinue},
          {SlotsChange::kAdded, facts(1, true, true), Kind::kReform, rdzv::Handover::kBroken},
          {SlotsChange::kRemoved, facts(3, false, true), Kind::kReform,
           rdzv::Handover::kHostsUpdated},
      });
  EXPECT_EQ(policy.reform_asked(3, facts(3, false, false)).kind, Kind::kContinue);
  EXPECT_EQ(policy.horovod_in_use("127.0.0.1:5000"), "");
}

TEST(RestartAllPolicy, SlotChangesRestartEveryWorkerWithoutCountingIt) {
  RestartAllPolicy policy(2, 1);
  expect_slots(policy, {
                           {SlotsChange::kAdded, facts(3, false, false), Kind::kRestartAll},
                           {SlotsChange::kRemoved, facts(3, false, false), Kind::kRestartAll},
                           {SlotsChange::kAdded, facts(3, false, true), Kind::kContinue},
                           // Waiting with no worker: the next generation forms at once.
                           {SlotsChange::kAdded, facts(0, true, false), Kind::kReform,
                            rdzv::Handover::kRestart},
                           {SlotsChange::kAdded, facts(1, true, false), Kind::kContinue},
                       });
  EXPECT_FALSE(policy.slots_changed(SlotsChange::kAdded, "why", facts(3, false, false)).counted);
  EXPECT_EQ(policy.restarts(), 0);
}

TEST(FailFastPolicy, IgnoresEveryElasticEvent) {
  FailFastPolicy policy;
  expect_slots(policy, {{SlotsChange::kAdded, facts(3, false, false), Kind::kContinue},
                        {SlotsChange::kRemoved, facts(0, true, false), Kind::kContinue}});
  EXPECT_EQ(policy.reform_asked(3, facts(3, false, false)).kind, Kind::kContinue);
  EXPECT_EQ(policy.horovod_in_use("127.0.0.1:5000"), "");
}

TEST(HorovodElasticPolicy, BehavesAsElasticUntilAWorkerUsesHorovodsRendezvous) {
  HorovodElasticPolicy policy(std::nullopt, 2);
  EXPECT_EQ(policy.slots_changed(SlotsChange::kAdded, "why", facts(3, false, false)).how,
            rdzv::Handover::kHostsUpdated);
  EXPECT_FALSE(policy.in_use());
  const std::string note = policy.horovod_in_use("127.0.0.1:5000");
  EXPECT_NE(note.find("(from 127.0.0.1:5000): the job runs Horovod"), std::string::npos) << note;
  EXPECT_TRUE(policy.in_use());
  EXPECT_EQ(policy.horovod_in_use("127.0.0.1:5001"), "");  // said once
}

TEST(HorovodElasticPolicy, SlotChangesGoToRankZeroExceptWhileWaitingForSlots) {
  HorovodElasticPolicy policy(std::nullopt, 2);
  policy.horovod_in_use("127.0.0.1:5000");
  const Action added = policy.slots_changed(SlotsChange::kAdded, "why", facts(3, false, false));
  EXPECT_EQ(added.kind, Kind::kNotifyRankZero);
  EXPECT_EQ(added.change, SlotsChange::kAdded);
  const Action removed = policy.slots_changed(SlotsChange::kRemoved, "gone", facts(3, false, true));
  EXPECT_EQ(removed.kind, Kind::kNotifyRankZero);
  EXPECT_EQ(removed.change, SlotsChange::kRemoved);
  EXPECT_EQ(removed.reason, "gone");
  expect_slots(policy, {{SlotsChange::kAdded, facts(3, false, true), Kind::kContinue},
                        {SlotsChange::kAdded, facts(1, true, false), Kind::kReform,
                         rdzv::Handover::kBroken}});
}

TEST(HorovodElasticPolicy, ReFormsOnceEveryLiveWorkerAsked) {
  HorovodElasticPolicy policy(std::nullopt, 2);
  EXPECT_EQ(policy.reform_asked(2, facts(3, false, false)).kind, Kind::kContinue);
  EXPECT_EQ(policy.reform_asked(3, facts(3, true, false)).kind, Kind::kContinue);
  const Action broken = policy.reform_asked(3, facts(3, false, false));
  EXPECT_EQ(broken.kind, Kind::kReform);
  EXPECT_EQ(broken.how, rdzv::Handover::kBroken);
  EXPECT_EQ(broken.reason,
            "every Horovod worker (3) asked to re-form, though none exited: a collective failed");
  EXPECT_EQ(broken.note, broken.reason + "; re-forming with the same workers");
  JobFacts pending = facts(3, false, false);
  pending.host_update_pending = true;
  pending.host_update_reason = "slots added by the discovery script";
  const Action update = policy.reform_asked(3, pending);
  EXPECT_EQ(update.kind, Kind::kReform);
  EXPECT_EQ(update.how, rdzv::Handover::kHostsUpdated);
  EXPECT_EQ(update.reason, "slots added by the discovery script");
  EXPECT_EQ(update.note,
            "every Horovod worker (3) asked for its place after the host change; re-forming");
  EXPECT_EQ(policy.survived(), 1);  // the re-formation after a failed collective counts
}

TEST(HorovodElasticPolicy, ARemovedWorkerThatDiesFirstReFormsTheOthersAtOnce) {
  HorovodElasticPolicy policy(0, 2);
  JobFacts pending = facts(3, false, false);
  pending.host_update_pending = true;
  pending.host_update_reason = "slots removed by the discovery script";
  const WorkerEnded removed{WorkerId{1, 0, 0}, ProcessEnd::signaled(SIGKILL), true};
  EXPECT_EQ(policy.worker_ended(removed, pending).kind, Kind::kContinue);  // not in use yet
  policy.horovod_in_use("127.0.0.1:5000");
  const Action action = policy.worker_ended(removed, pending);
  EXPECT_EQ(action.kind, Kind::kReform);
  EXPECT_EQ(action.how, rdzv::Handover::kHostsUpdated);
  EXPECT_EQ(action.reason, "slots removed by the discovery script");
  EXPECT_EQ(policy.worker_ended(removed, facts(3, false, false)).kind, Kind::kContinue);
  // A plain failure still counts against --reset-limit 0.
  EXPECT_EQ(on_end(policy, ProcessEnd::exited(1), pending), Kind::kFailJob);
}

TEST(MakePolicy, ChoosesOnePolicyPerKindOfJob) {
  JobSpec spec;
  EXPECT_NE(dynamic_cast<FailFastPolicy*>(make_policy(spec).get()), nullptr);
  spec.max_restarts = 2;
  EXPECT_NE(dynamic_cast<RestartAllPolicy*>(make_policy(spec).get()), nullptr);
  spec.elastic.min_np = 2;
  spec.elastic.max_np = 4;
  EXPECT_NE(dynamic_cast<RestartAllPolicy*>(make_policy(spec).get()), nullptr);
  spec.max_restarts = 0;
  EXPECT_NE(dynamic_cast<HorovodElasticPolicy*>(make_policy(spec).get()), nullptr);
}

JobFacts running(std::size_t members, std::size_t newcomers, bool waiting) {
  JobFacts f;
  f.members_running = members;
  f.newcomers_running = newcomers;
  f.waiting_for_slots = waiting;
  return f;
}

TEST(ElasticPolicy, TheJobEndsWhenEveryWorkerThatTrainedHasFinished) {
  struct Case {
    JobFacts facts;
    Kind kind;
    std::string note;
  };
  const std::vector<Case> cases = {
      {running(1, 1, false), Kind::kContinue, ""},  // another member still trains
      {running(0, 0, false), Kind::kContinue, ""},  // the last one: the job ends by itself
      {running(0, 2, false), Kind::kFinishJob,
       "every worker that took part in the training exited 0: the job is done; stopping 2 "
       "newcomers, which are not needed"},
      {running(0, 1, true), Kind::kFinishJob,
       "every worker that took part in the training exited 0: the job is done; stopping 1 "
       "newcomer, which is not needed"},
      {running(0, 0, true), Kind::kFinishJob,
       "every worker that took part in the training exited 0: the job is done; no longer "
       "waiting for slots"},
  };
  ElasticPolicy elastic(0, 2);
  for (const auto& c : cases) {
    const Action action = elastic.worker_ended({WorkerId{0, 0, 0}, ProcessEnd::exited(0)}, c.facts);
    EXPECT_EQ(action.kind, c.kind) << c.note;
    EXPECT_EQ(action.note, c.note);
  }
  // A failure is never the end of the training, and a removed slot's worker decides nothing.
  EXPECT_EQ(
      elastic.worker_ended({WorkerId{0, 0, 0}, ProcessEnd::exited(0), true}, running(0, 1, false))
          .kind,
      Kind::kContinue);
  FailFastPolicy fail_fast;
  RestartAllPolicy restart_all(2, 1);
  for (Policy* other : std::vector<Policy*>{&fail_fast, &restart_all}) {
    EXPECT_EQ(
        other->worker_ended({WorkerId{0, 0, 0}, ProcessEnd::exited(0)}, running(0, 1, true)).kind,
        Kind::kContinue);
  }
}

TEST(HorovodElasticPolicy, LeavesNewcomersToHorovodOnceItIsInUse) {
  HorovodElasticPolicy policy(0, 2);
  const WorkerEnded finished{WorkerId{0, 0, 0}, ProcessEnd::exited(0)};
  EXPECT_EQ(policy.worker_ended(finished, running(0, 1, false)).kind, Kind::kFinishJob);
  policy.horovod_in_use("127.0.0.1:5000");
  // Horovod does not say when a newcomer joined: it may still be finishing its training.
  EXPECT_EQ(policy.worker_ended(finished, running(0, 1, false)).kind, Kind::kContinue);
  EXPECT_EQ(policy.worker_ended(finished, running(0, 0, true)).kind, Kind::kFinishJob);
}

// A re-formation the workers ask for after a failed collective counts against --reset-limit:
// a client cannot make the job roll back for ever.
TEST(HorovodElasticPolicy, ReFormationsTheWorkersAskForCountAgainstTheResetLimit) {
  HorovodElasticPolicy policy(2, 2);
  EXPECT_EQ(policy.reform_asked(3, running(3, 0, false)).kind, Kind::kReform);
  EXPECT_EQ(policy.reform_asked(3, running(3, 0, false)).kind, Kind::kReform);
  const Action third = policy.reform_asked(3, running(3, 0, false));
  EXPECT_EQ(third.kind, Kind::kFailJob);
  EXPECT_EQ(third.reason,
            "every Horovod worker (3) asked to re-form, though none exited: a collective failed "
            "(no re-formation left: --reset-limit 2 used)");
  EXPECT_EQ(policy.survived(), 2);
}

}  // namespace
}  // namespace hvdrun::launcher
