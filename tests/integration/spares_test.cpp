// Integration: warm spares (--spares) with the real hvdrun and examples/train_elastic. A spare
// starts with the job on a slot beyond --max-np and waits in hvdrun::init(); when a worker is
// killed, the next generation takes the spare in its place, so the job keeps its size, and
// the spare gets the state from rank 0 like any newcomer. A spare killed while it waits is
// replaced; spares not needed at the end are told so and exit 0; none outlives hvdrun, also
// when hvdrun is killed.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Spares, AKilledWorkersPlaceGoesToTheSpareAndTheJobKeepsItsSize) {
  TempDir dir;
  const auto timeline = (dir.path / "t.json").string();
  HvdrunProcess job(elastic_job(
      dir,
      {"-H", "localhost:5", "-np", "4", "--min-np", "4", "--max-np", "4", "--spares", "1",
       "--blacklist-cooldown-range", "60", "60", "--timeline", timeline, "--verbose"},
      3));
  const pid_t spare = pid_of_slot(dir, 4, 5);  // started with the job, before any failure
  const pid_t victim = pid_of_slot(dir, 2, 5);
  ASSERT_TRUE(job.wait_for_output("hvdrun: spare 4 (host localhost) waits", 1));
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 1: 4 workers, 1 of them new (1 a warm spare)"))
      << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 4u) << r.out;
  ASSERT_TRUE(done.contains(spare)) << spare << "\n" << r.out;
  EXPECT_FALSE(done.contains(victim));
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 4);  // at full size
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 24576 samples of 24576; all ranks agree")) << r.out;
  // The spare waited in init(): its first line is the one it printed as rank 3 of 4.
  EXPECT_TRUE(contains(r.out, "]<stdout>:pid " + std::to_string(spare) + " starts as rank "))
      << r.out;
  EXPECT_TRUE(contains(r.err, "hvdrun: spares: 1 started, 1 promoted (spare 4 (host localhost, "))
      << r.err;
  // Two generations of 4.
  const auto gens = generations(r.err);
  ASSERT_EQ(gens.size(), 2u) << r.err;
  EXPECT_EQ(gens[1].first, 4);
  // The timeline has the spare's wait (its own span) and then its life as rank 3.
  std::ifstream in(timeline);
  const std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(trace, R"("name":"spare 4","cat":"worker")")) << trace;
  EXPECT_TRUE(contains(trace, R"("name":"spare waiting","cat":"event")")) << trace;
  EXPECT_TRUE(contains(trace, R"("name":"rank 3","cat":"worker")")) << trace;
}

TEST(Spares, ASpareKilledWhileItWaitsIsReplacedAndTheLastIsToldItIsNotNeeded) {
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir,
                  {"-H", "localhost:5", "-np", "4", "--min-np", "4", "--max-np", "4", "--spares",
                   "1", "--blacklist-cooldown-range", "60", "60", "--verbose"},
                  16));
  const pid_t first = pid_of_slot(dir, 4, 5);
  ASSERT_TRUE(job.wait_for_output("hvdrun: spare 4 (host localhost) waits", 1));
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  const pid_t second = pid_of_slot(dir, 5, 6);  // at once: a spare's end cools no host
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: spare 4 (host localhost, pid " + std::to_string(first) +
                                  ") was killed by signal SIGKILL (9) while it waited; another "
                                  "started"))
      << r.err;
  // No generation was lost to it: the members ran in one generation.
  EXPECT_EQ(generations(r.err).size(), 0u) << r.err;  // the summary lists only re-formations
  EXPECT_TRUE(contains(r.out, "applied 131072 samples of 131072; all ranks agree")) << r.out;
  // The second spare was told it is not needed, and ended as a worker left out does.
  EXPECT_TRUE(
      contains(r.out, "[spare.5]<stdout>:pid " + std::to_string(second) + " left the job: "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "spare not needed: the job is ending")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: spares: 2 started, 0 promoted, 1 ended while they "
                       "waited, 1 not needed at the end"))
      << r.err;
  EXPECT_FALSE(alive(second));
}

// A program that cannot wait as a spare (here: it exits at once) is not started again and
// again: after 3 spares in a row end so, hvdrun says so and the job goes on without spares.
TEST(Spares, SparesThatKeepEndingAreGivenUp) {
  TempDir dir;
  const auto r = run_hvdrun(
      {"-H", "localhost:3", "-np", "2", "--min-np", "2", "--max-np", "2", "--spares", "1", "sh",
       "-c", "if [ \"$HVDRUN_SPARE\" = 1 ]; then exit 5; fi; sleep 2; echo member $HVDRUN_SLOT"},
      {}, seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "3 spares in a row ended so; no more spares are started")) << r.err;
  EXPECT_TRUE(contains(r.out, "member 0")) << r.out;
  EXPECT_TRUE(contains(r.out, "member 1")) << r.out;
  EXPECT_TRUE(contains(r.err, "hvdrun: spares: 3 started, 0 promoted, 3 ended while they waited"))
      << r.err;
}

TEST(Spares, NoSpareOutlivesAKilledHvdrun) {
  TempDir dir;
  HvdrunProcess job(elastic_job(
      dir, {"-H", "localhost:3", "-np", "2", "--min-np", "2", "--max-np", "2", "--spares", "1"},
      20));
  const pid_t spare = pid_of_slot(dir, 2, 3);
  const std::vector<pid_t> all = {pid_of_slot(dir, 0, 3), pid_of_slot(dir, 1, 3), spare};
  job.signal(SIGKILL);
  job.finish(seconds(30));
  EXPECT_TRUE(wait_until_gone(all, seconds(10)).empty());
}

// A signal forwarded to the job reaches its members, not the spares (which may not handle it
// yet): here the spare has no handler and would die of SIGUSR1.
TEST(Spares, ForwardedSignalsReachTheMembersOnly) {
  TempDir dir;
  // Each writes its pid once it is ready: a member once its trap is set.
  const std::string pid_file = "echo $$ > " + dir.path.string() + "/$HVDRUN_SLOT.pid; ";
  const std::string script = "if [ \"$HVDRUN_SPARE\" = 1 ]; then " + pid_file +
                             "exec sleep 30; fi; "
                             "trap 'echo got USR1; exit 0' USR1; " +
                             pid_file + "while :; do sleep 0.05; done";
  HvdrunProcess job({"-H", "localhost:3", "-np", "2", "--min-np", "2", "--max-np", "2", "--spares",
                     "1", "sh", "-c", script});
  const pid_t spare = pid_of_slot(dir, 2, 3);  // and the members' traps are set
  job.signal(SIGUSR1);
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "to 2 ranks")) << r.err;
  EXPECT_EQ(r.out.find("[spare.2]"), std::string::npos) << r.out;
  EXPECT_FALSE(contains(r.err, "spare 2 (host localhost, pid " + std::to_string(spare) +
                                   ") was killed by signal SIGUSR1"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:got USR1")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1]<stdout>:got USR1")) << r.out;
  EXPECT_FALSE(alive(spare));  // dismissed, then killed after the grace period at most
}

}  // namespace
}  // namespace hvdrun::itest
