// Integration: the end of an elastic job is the end. Once every worker that took part in the
// training has exited 0, the job succeeds at once: a newcomer still waiting to join them is
// stopped as not needed, and a wait for slots is over. The workers are shell scripts under
// the real hvdrun, with a discovery script the test steers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

// A slot appears after the workers' last commit: they finish (exit 0) while the newcomer
// started for it waits to join them. Without the rule the newcomer ran on (here 60 s; a
// libhvdrun newcomer waited for its assignment, died, and hvdrun waited --elastic-timeout).
TEST(ElasticEnd, ANewcomerStillJoiningWhenTheOthersFinishIsStoppedAndTheJobSucceeds) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n");
  write_file(dir.path / "later", "localhost:3\n");
  const std::string worker = "if [ \"$HVDRUN_SLOT\" -lt 2 ]; then " +
                             switch_hosts_command(dir, "later") +
                             "; sleep 1.5; echo \"rank $RANK done\"; exit 0; fi; "
                             "echo newcomer started; exec sleep 60";
  const auto r =
      run_hvdrun({"-np", "2", "--min-np", "1", "--max-np", "3", "--host-discovery-script",
                  hosts_script(dir), "--discovery-interval", "0.1", "/bin/sh", "-c", worker},
                 {}, seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.seconds, 15) << r.err;
  EXPECT_TRUE(contains(r.out, "newcomer started")) << r.out;  // the slot was taken up
  EXPECT_TRUE(contains(r.out, "rank 0 done")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 1 done")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "every worker that took part in the training exited 0: the job is "
                       "done; stopping 1 newcomer, which is not needed"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "job failed")) << r.err;
  EXPECT_FALSE(contains(r.err, "missing")) << r.err;
}

// Below --min-np after a failure, the job waits for slots; the survivor then finishes its
// work: nothing is left to wait for, and the job succeeds (before: it failed after
// --elastic-timeout, blaming the rank that had finished).
TEST(ElasticEnd, ASurvivorThatFinishesWhileTheJobWaitsForSlotsEndsTheWait) {
  TempDir dir;
  const std::string worker =
      "if [ \"$RANK\" = 0 ]; then exit 3; fi; sleep 1.5; echo \"rank $RANK done\"";
  const auto r = run_hvdrun({"-np", "2", "--min-np", "2", "--max-np", "2", "--elastic-timeout",
                             "60", "/bin/sh", "-c", worker},
                            {}, seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.seconds, 15) << r.err;
  EXPECT_TRUE(contains(r.err, "below --min-np 2")) << r.err;  // it did wait
  EXPECT_TRUE(contains(r.err, "the job is done; no longer waiting for slots")) << r.err;
  EXPECT_TRUE(contains(r.out, "rank 1 done")) << r.out;
}

// Both first workers fail; once their host's cooldown ends, a generation of newcomers only
// starts: hvdrun says the training's state is lost (before, it restarted from the initial
// state without a word).
TEST(ElasticEnd, AGenerationWithNoSurvivorSaysTheTrainingStartsAgain) {
  const std::string worker =
      "if [ \"$HVDRUN_SLOT\" -lt 2 ]; then exit 1; fi; echo \"fresh worker $HVDRUN_SLOT\"";
  const auto r =
      run_hvdrun({"-np", "2", "--min-np", "1", "--max-np", "2", "--blacklist-cooldown-range", "1",
                  "2", "--elastic-timeout", "30", "/bin/sh", "-c", worker},
                 {}, std::chrono::seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "fresh worker")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "all of them new: no worker survived to hand over the training's "
                       "state, so it starts again from its initial state"))
      << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
