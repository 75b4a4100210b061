// Integration: elastic jobs (--min-np). The real hvdrun runs examples/train_elastic; a worker
// is SIGKILLed or SIGSTOPped mid-run. The survivors keep their processes, roll back to their
// last commit, re-form with new ranks and finish with identical weights, having applied every
// sample exactly once; a host's slots come back after the cooldown; below --min-np the job
// fails after --elastic-timeout; --reset-limit ends the job; a job starts on every slot up to
// --max-np.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Elastic, AKilledWorkerLeavesThreeSurvivorsThatFinishWithTheirOwnProcesses) {
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir, {"-np", "4", "--min-np", "2", "--blacklist-cooldown-range", "60", "60"}, 3));
  const pid_t victim = pid_of_slot(dir, 2);
  std::vector<pid_t> survivors = {pid_of_slot(dir, 0), pid_of_slot(dir, 1), pid_of_slot(dir, 3)};
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the 4 workers started";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "(host localhost, pid " + std::to_string(victim) +
                                  ") was killed by signal SIGKILL (9); host localhost unused "
                                  "for 60 s; re-forming with 3 surviving workers"))
      << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 3u) << r.out;
  for (pid_t pid : survivors) {  // the same processes, in a generation of 3
    ASSERT_TRUE(done.contains(pid)) << pid << "\n" << r.out;
    EXPECT_EQ(done.at(pid).first, 3);
  }
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "re-formed: 3 ranks, resuming at epoch")) << r.out;
  EXPECT_TRUE(contains(r.out, "applied 24576 samples of 24576; all ranks agree")) << r.out;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(\n    1: 3 ranks, started [0-9.]+ s, )"
                                                  R"(formed [0-9.]+ s, ended [0-9.]+ s: )"
                                                  R"(every rank exited 0)")))
      << r.err;
}

TEST(Elastic, WhenRankZeroDiesASurvivorBecomesRankZero) {
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir, {"-np", "3", "--min-np", "2", "--blacklist-cooldown-range", "60", "60"}, 2));
  const pid_t victim = pid_of_slot(dir, 0, 3);
  const pid_t next = pid_of_slot(dir, 1, 3);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 3)) << "the 3 workers started";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  // Its lines carry its new rank.
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:pid " + std::to_string(next) + " done as rank 0/2"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "applied 16384 samples of 16384; all ranks agree")) << r.out;
  expect_one_hash(finished(r.out), r.out);
}

TEST(Elastic, TheHostsSlotsComeBackAfterTheCooldownAndTheNewcomerGetsTheState) {
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir, {"-np", "4", "--min-np", "2", "--blacklist-cooldown-range", "1", "1"}, 6));
  const pid_t victim = pid_of_slot(dir, 3);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the 4 workers started";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "re-forming with 3 surviving workers")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 2: 4 workers, 1 of them new")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 4u) << r.out;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 4);
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 49152 samples of 49152; all ranks agree")) << r.out;
}

TEST(Elastic, AStoppedWorkerIsFoundByItsMissedHeartbeatsAndReplaced) {
  TempDir dir;
  HvdrunProcess job(elastic_job(dir,
                                {"-np", "4", "--min-np", "2", "--unresponsive-timeout", "1",
                                 "--blacklist-cooldown-range", "60", "60"},
                                3));
  const pid_t victim = pid_of_slot(dir, 1);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the 4 workers started";
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "pid " + std::to_string(victim) +
                                  ") missed its heartbeats (no "
                                  "heartbeat for "))
      << r.err;
  EXPECT_TRUE(contains(r.out, "applied 24576 samples of 24576; all ranks agree")) << r.out;
  EXPECT_FALSE(alive(victim));
}

TEST(Elastic, BelowMinNpTheJobFailsAfterTheElasticTimeoutAndLeavesNothing) {
  TempDir dir;
  HvdrunProcess job(elastic_job(dir,
                                {"-np", "4", "--min-np", "4", "--elastic-timeout", "2",
                                 "--blacklist-cooldown-range", "60", "60"},
                                20));
  std::vector<pid_t> all;
  for (int slot = 0; slot < 4; ++slot) all.push_back(pid_of_slot(dir, slot));
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the 4 workers started";
  ASSERT_EQ(::kill(all[1], SIGKILL), 0);
  const auto r = job.finish(seconds(60));
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "below --min-np 4: 3 workers left and no free slot; waiting up to "
                       "2 s (--elastic-timeout) for slots"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "job failed: only 3 workers for 2 s (--elastic-timeout), below "
                       "--min-np 4"))
      << r.err;
  EXPECT_TRUE(wait_until_gone(all, seconds(10)).empty());
}

// A worker that dies after its assignment, before its ring connects, breaks the first
// generation while the others form it (inside hvdrun::init): they re-join, and the job goes on
// without it.
TEST(Elastic, AWorkerLostWhileTheFirstGenerationFormsLeavesSurvivorsThatFinish) {
  TempDir dir;
  HvdrunProcess job(elastic_job(
      dir, {"-np", "4", "--min-np", "2", "--blacklist-cooldown-range", "60", "60"}, 2,
      std::string("if [ \"$HVDRUN_SLOT\" = 1 ]; then exec ") + JOIN_THEN_DIE + "; fi; "));
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "slot 1 assigned rank ")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       ") was killed by signal SIGKILL (9); host localhost unused for 60 s; "
                       "re-forming with 3 surviving workers"))
      << r.err;
  const auto done = finished(r.out);
  EXPECT_EQ(done.size(), 3u) << r.out;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 3) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 16384 samples of 16384; all ranks agree")) << r.out;
}

// --reset-limit 1: the first failure re-forms, the second ends the job, and the summary says
// which limit made it the job's failure.
TEST(Elastic, TheResetLimitEndsTheJob) {
  TempDir dir;
  HvdrunProcess job(elastic_job(dir, {"-np", "3", "--min-np", "1", "--reset-limit", "1"}, 20));
  const pid_t first = pid_of_slot(dir, 2, 3);
  const pid_t second = pid_of_slot(dir, 1, 3);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 3)) << "the 3 workers started";
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(job.wait_for_output("re-formed: 2 ranks", 1)) << "the survivors re-formed";
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
  EXPECT_TRUE(
      contains(r.err, "pid " + std::to_string(first) + ") was killed by signal SIGKILL (9); "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "pid " + std::to_string(second) +
                                  ") was killed by signal SIGKILL (9) (no re-formation left: "
                                  "--reset-limit 1 used)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: job failed: last failure was rank ")) << r.err;
  // The generation it ended names the worker with its pid, as every generation line does.
  EXPECT_TRUE(contains(r.err, "    1: 2 ranks, ")) << r.err;
  EXPECT_TRUE(
      contains(r.err, ", pid " + std::to_string(second) + ") was killed by signal SIGKILL (9)\n"))
      << r.err;
}

TEST(Elastic, ASecondFailureDuringTheReFormationLeavesTwoSurvivorsThatFinish) {
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir, {"-np", "4", "--min-np", "2", "--blacklist-cooldown-range", "60", "60"}, 3));
  const pid_t first = pid_of_slot(dir, 1);
  const pid_t second = pid_of_slot(dir, 3);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the 4 workers started";
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  // The survivors are re-joining now.
  ASSERT_TRUE(job.wait_for_output("re-forming with 3 surviving workers", 1));
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "re-forming with 2 surviving workers")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 2u) << r.out << r.err;
  EXPECT_TRUE(done.contains(pid_of_slot(dir, 0)) && done.contains(pid_of_slot(dir, 2))) << r.out;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 2);
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 24576 samples of 24576; all ranks agree")) << r.out;
}

TEST(Elastic, ANewcomerThatDiesWhileJoiningIsReplacedByTheNextOne) {
  TempDir dir;
  // The first replacement (worker key 4) dies before it joins; the next one (key 5) works.
  HvdrunProcess job(
      elastic_job(dir, {"-np", "4", "--min-np", "2", "--blacklist-cooldown-range", "1", "1"}, 6,
                  "if [ \"$HVDRUN_SLOT\" = 4 ]; then echo 'no GPU here' >&2; exit 7; fi; "));
  const pid_t victim = pid_of_slot(dir, 3);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the 4 workers started";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "exited with code 7; host localhost unused for 1 s")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 4u) << r.out;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 4);
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 49152 samples of 49152; all ranks agree")) << r.out;
}

// A job that waits below --min-np after a failure: its re-formation is under way.
struct WaitingJob {
  TempDir dir;
  std::vector<pid_t> pids;
  std::unique_ptr<HvdrunProcess> job;
  WaitingJob() {
    job = std::make_unique<HvdrunProcess>(
        elastic_job(dir,
                    {"-np", "3", "--min-np", "3", "--elastic-timeout", "60",
                     "--blacklist-cooldown-range", "60", "60"},
                    20));
    for (int slot = 0; slot < 3; ++slot) pids.push_back(pid_of_slot(dir, slot, 3));
    EXPECT_TRUE(job->wait_for_output("starts as rank", 3)) << "the 3 workers started";
    EXPECT_EQ(::kill(pids[2], SIGKILL), 0);
    EXPECT_TRUE(job->wait_for_output("(--elastic-timeout) for slots", 1)) << "it waits for slots";
  }
};

TEST(Elastic, CtrlCDuringAReFormationEndsTheJobAtOnce) {
  WaitingJob waiting;
  const auto start = std::chrono::steady_clock::now();
  waiting.job->signal(SIGINT);
  const auto r = waiting.job->finish(seconds(30));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10)) << r.err;
  EXPECT_TRUE(contains(r.err, "waiting up to 60 s (--elastic-timeout) for slots")) << r.err;
  EXPECT_TRUE(contains(r.err, "interrupted (SIGINT)")) << r.err;
  EXPECT_TRUE(wait_until_gone(waiting.pids, seconds(10)).empty());
}

TEST(Elastic, SigkillOfHvdrunDuringAReFormationLeavesNothing) {
  WaitingJob waiting;
  waiting.job->signal(SIGKILL);
  waiting.job->finish(seconds(30));
  EXPECT_TRUE(wait_until_gone(waiting.pids, seconds(10)).empty());
}

// As horovodrun's: -np is the least an elastic job starts with; it takes every slot its hosts
// give, up to --max-np, from the start.
TEST(Elastic, AJobStartsOnEverySlotItsHostsGiveUpToMaxNp) {
  TempDir dir;
  const auto r = run_hvdrun(
      elastic_job(dir, {"-H", "localhost:4", "-np", "2", "--min-np", "1", "--max-np", "3"}, 1));
  EXPECT_EQ(r.status, 0) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 3u) << r.out;
  for (const auto& [pid, result] : done) EXPECT_EQ(result.first, 3) << pid << "\n" << r.out;
  expect_one_hash(done, r.out);
  // One generation of 3 from the start: no worker joined later, none re-formed.
  EXPECT_EQ(count_of(r.out, "starts as rank"), 3u) << r.out;
  EXPECT_EQ(count_of(r.out, "after 0 resets"), 3u) << r.out;
}

TEST(Elastic, FlagsAreCheckedAgainstEachOther) {
  auto r = run_hvdrun({"-np", "2", "--min-np", "3", "/bin/true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--min-np 3 is above -np 2")) << r.err;
  r = run_hvdrun({"-np", "2", "--min-np", "1", "--max-restarts", "1", "/bin/true"});
  EXPECT_EQ(r.status, 0) << r.err;  // restarts on the slots available (restart_elastic_test)
  r = run_hvdrun({"-np", "2", "--blacklist-cooldown-range", "5", "2", "/bin/true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "MAX (2) is below MIN (5)")) << r.err;
  r = run_hvdrun(
      {"-np", "2", "-H", "localhost:2", "--host-discovery-script", "./d.sh", "/bin/true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "-H and --host-discovery-script cannot be used together")) << r.err;
  r = run_hvdrun({"--host-discovery-script", "./d.sh", "/bin/true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "-np is required with --host-discovery-script")) << r.err;
  r = run_hvdrun(
      {"-np", "1", "--host-discovery-script", "./d.sh", "--discovery-timeout", "0", "/bin/true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--discovery-timeout 0: must be at least 0.01 seconds")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
