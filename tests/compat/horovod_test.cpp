// Real Horovod 0.28.1 programs under the real hvdrun: Horovod's Gloo rendezvous served by
// hvdrun, collectives and DistributedOptimizer training on 2 and 4 ranks, heterogeneous hosts
// (local_ and cross_ scopes), horovodrun's tuning flags reaching Horovod (its timeline file),
// fail-fast on a rank that raises, an elastic query failing at once in a static job, and an
// elastic job of Horovod workers ending at its first failure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/compat/compat_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

// Every rank of a successful horovod_job.py run reported its checks and the same parameters.
void expect_job_passed(const RunResult& r, int size) {
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::set<std::string> digests;
  for (int rank = 0; rank < size; ++rank) {
    const auto topology = rank_lines(r.out, rank, "topology ");
    ASSERT_EQ(topology.size(), 1u) << r.out;
    EXPECT_EQ(field(topology[0], "rank"), std::to_string(rank));
    EXPECT_EQ(field(topology[0], "size"), std::to_string(size));
    EXPECT_EQ(field(topology[0], "gloo"), "True");
    EXPECT_EQ(field(topology[0], "mpi"), "False");
    EXPECT_EQ(rank_lines(r.out, rank, "collectives ").size(), 1u) << r.out;
    const auto train = rank_lines(r.out, rank, "train ");
    ASSERT_EQ(train.size(), 1u) << r.out;
    EXPECT_EQ(field(train[0], "in_sync"), "True") << train[0];
    digests.insert(field(train[0], "params"));
  }
  EXPECT_EQ(digests.size(), 1u) << r.out;
}

TEST(Horovod, TwoRanksAllreduceAllgatherBroadcastAndTraining) {
  REQUIRE_HOROVOD();
  const auto r =
      run_hvdrun({"-np", "2", kPython, job_script("horovod_job.py")}, horovod_env(), seconds(120));
  expect_job_passed(r, 2);
  EXPECT_TRUE(contains(r.out,
                       "[1]<stdout>:collectives rank=1 sum=3 average=1.5 "
                       "allgather=[0, 0, 1, 10] broadcast=100 OK"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "iface=lo")) << r.out;
}

// Four ranks with horovodrun's tuning flags: the timeline Horovod's rank 0 writes proves the
// variables reached Horovod.
TEST(Horovod, FourRanksWithTuningFlags) {
  REQUIRE_HOROVOD();
  TempDir dir;
  const auto timeline = dir.path / "timeline.json";
  const auto r = run_hvdrun(
      {"-np", "4", "--fusion-threshold-mb", "32", "--cycle-time-ms", "2", "--timeline-filename",
       timeline.string(), kPython, job_script("horovod_job.py"), "--steps", "10"},
      horovod_env(), seconds(150));
  expect_job_passed(r, 4);
  std::ifstream in(timeline);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(contains(text.str(), "\"ph\"")) << "no timeline events in " << timeline;
  EXPECT_TRUE(contains(text.str(), "sum")) << "the allreduce 'sum' is not in the timeline";
}

TEST(Horovod, RankThatRaisesIsNamedInTheSummary) {
  REQUIRE_HOROVOD();
  const auto r = run_hvdrun({"-np", "2", kPython, job_script("horovod_job.py"), "--fail-rank", "1"},
                            horovod_env(), seconds(120));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: first failure was rank 1 on localhost: exit "
                       "code 1"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "RuntimeError: rank 1 fails on purpose")) << r.err;
  EXPECT_LT(r.seconds, 60.0);
}

// A worker that asks for Horovod's elastic rank_and_size in a static job fails at once, and
// hvdrun says why.
TEST(Horovod, ElasticQueryInAStaticJobFailsAtOnce) {
  REQUIRE_HOROVOD();
  const std::string script =
      "import horovod.torch as hvd\n"
      "hvd.init()\n"
      "hvd.shutdown()\n"
      "hvd.init()\n"
      "print('re-initialised', hvd.rank())\n";
  const auto r = run_hvdrun({"-np", "2", "-x", "HOROVOD_ELASTIC=1", kPython, "-c", script},
                            horovod_env(), seconds(90));
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(contains(r.out, "re-initialised")) << r.out;
  EXPECT_TRUE(contains(r.err, "rank_and_size")) << r.err;
  EXPECT_LT(r.seconds, 45.0);
}

// An elastic job whose workers turn out to run Horovod (a key stored in Horovod's rendezvous)
// says so at once; a failure then ends the job naming why, instead of re-forming workers that
// cannot re-form.
TEST(Horovod, AnElasticJobOfHorovodWorkersEndsAtTheFirstFailureSayingWhy) {
  REQUIRE_HOROVOD();
  const auto r = run_hvdrun(
      {"-np", "2", "--min-np", "1", kPython, job_script("horovod_job.py"), "--fail-rank", "1"},
      horovod_env(), seconds(120));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(
      r.err, "this job runs Horovod, so a failure will end it and host changes are not taken in"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: first failure was rank 1 on localhost: exit code 1 "
                       "(an elastic job does not re-form Horovod workers"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "re-forming")) << r.err;
  EXPECT_LT(r.seconds, 60.0);
}

}  // namespace
}  // namespace hvdrun::itest
