// Real Horovod 0.28.1 programs under the real hvdrun: Horovod's Gloo rendezvous served by
// hvdrun, collectives and DistributedOptimizer training on 2 and 4 ranks, heterogeneous hosts
// (local_ and cross_ scopes), horovodrun's tuning flags reaching Horovod (its timeline file),
// fail-fast on a rank that raises, an elastic query failing at once in a static job, and an
// elastic job of Horovod workers (hvd.elastic.run) re-forming after a failure and taking in
// slots that the discovery script adds or removes.
#include <gtest/gtest.h>

#include <cstdlib>

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

// hvdrun -cb reports what the installed Horovod was built with, as horovodrun does: the
// prebuilt Horovod here has PyTorch and Gloo, and no NCCL (whatever libhvdrun was built with).
TEST(Horovod, CheckBuildReportsHorovodsOwnBuild) {
  REQUIRE_HOROVOD();
  auto env = horovod_env();
  env["PATH"] = std::string("/usr/bin:") + std::getenv("PATH");  // python3 with torch (Debian's)
  const auto r = run_hvdrun({"-cb"}, env, seconds(150));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "Horovod v0.28.1:\n\nAvailable Frameworks:\n    [ ] TensorFlow\n"
                       "    [X] PyTorch\n    [ ] MXNet\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "Available Controllers:\n    [ ] MPI\n    [X] Gloo\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "Available Tensor Operations:\n    [ ] NCCL\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "libhvdrun programs (C++)")) << r.out;
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

// An elastic job of real Horovod workers (hvd.elastic.run): one dies in the middle of the
// training; the survivors roll back to their last commit, get their new places from hvdrun's
// rendezvous (GET /rank_and_size) and finish in a generation of 2 with equal weights.
TEST(Horovod, AnElasticJobReFormsHorovodWorkersAfterAFailure) {
  REQUIRE_HOROVOD();
  // A survivor whose ring neighbour was not the dead worker notices only by Gloo's timeout.
  const auto r =
      run_hvdrun({"-np", "3", "--min-np", "2", "--blacklist-cooldown-range", "60", "60", "-x",
                  "HOROVOD_GLOO_TIMEOUT_SECONDS=5", kPython, job_script("horovod_elastic_job.py"),
                  "--fail-slot", "1", "--fail-at", "10", "--batches", "40"},
                 horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "the job runs Horovod; its workers re-form after a failure"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "slot 1 dies at batch 10")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       ") exited with code 1; host localhost unused for 60 s; re-forming "
                       "with 2 surviving workers"))
      << r.err;
  expect_elastic_done(r.out, 40, {1, 1});
  for (int rank = 0; rank < 2; ++rank) {  // rolled back to the commit at batch 8, as 2 ranks
    const auto reset = rank_lines(r.out, rank, "reset ");
    ASSERT_EQ(reset.size(), 1u) << r.out;
    EXPECT_EQ(field(reset[0], "size"), "2") << reset[0];
    EXPECT_EQ(field(reset[0], "batch"), "8") << reset[0];
  }
  EXPECT_TRUE(rank_lines(r.out, 2, "done ").empty()) << r.out;
}

// A second worker dies while the survivors of the first failure wait for their places: they
// are answered only when every survivor has asked, so the second death gives them the next
// generation instead of a Gloo setup with a dead member (which would end them after 30 s).
TEST(Horovod, ASecondDeathWhileSurvivorsReFormLeavesTwoThatFinish) {
  REQUIRE_HOROVOD();
  // A survivor whose ring neighbour was not the dead worker notices only by Gloo's timeout.
  const auto r = run_hvdrun(
      {"-np", "4", "--min-np", "2", "--blacklist-cooldown-range", "60", "60", "-x",
       "HOROVOD_GLOO_TIMEOUT_SECONDS=5", kPython, job_script("horovod_elastic_job.py"),
       "--fail-slot", "1", "--late-fail-slot", "2", "--fail-at", "10", "--batches", "40"},
      horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "slot 2 dies late at batch 10")) << r.out;
  EXPECT_TRUE(contains(r.err, "re-forming with 2 surviving workers")) << r.err;
  expect_elastic_done(r.out, 40, {1, 1});
}

// A worker's Gloo connections break (it shuts Horovod down and raises Horovod's internal
// error): every collective fails and no process exits. Once every worker asks for its place,
// hvdrun re-forms the same three, and they finish.
TEST(Horovod, ACollectiveThatFailsWithNoExitReFormsTheSameWorkers) {
  REQUIRE_HOROVOD();
  const auto r =
      run_hvdrun({"-np", "3", "--min-np", "2", kPython, job_script("horovod_elastic_job.py"),
                  "--break-slot", "1", "--fail-at", "10", "--batches", "30"},
                 horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "slot 1 breaks its connections at batch 10")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "every Horovod worker (3) asked to re-form, though none exited: a "
                       "collective failed; re-forming with the same workers"))
      << r.err;
  expect_elastic_done(r.out, 30, {1, 1, 1});
}

// The same with --reset-limit 0: the re-formation the workers ask for counts as one, so the
// job fails, saying why, instead of rolling back (a client could otherwise make it roll back
// for ever).
TEST(Horovod, AReFormationTheWorkersAskForCountsAgainstTheResetLimit) {
  REQUIRE_HOROVOD();
  const auto r = run_hvdrun({"-np", "3", "--min-np", "2", "--reset-limit", "0", kPython,
                             job_script("horovod_elastic_job.py"), "--break-slot", "1", "--fail-at",
                             "10", "--batches", "30"},
                            horovod_env(), seconds(150));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: every Horovod worker (3) asked to re-form, though "
                       "none exited: a collective failed (no re-formation left: --reset-limit 0 "
                       "used); terminating 3 ranks"))
      << r.err;
}

// The discovery script lists DIR/hosts; slot 0 rewrites it to `later` at batch 12 of 40;
// `job_flags` go to the job script.
std::vector<std::string> hosts_changing_job(const TempDir& dir, const std::string& first,
                                            const std::string& later,
                                            std::vector<std::string> flags,
                                            const std::vector<std::string>& job_flags = {}) {
  const auto hosts = (dir.path / "hosts").string();
  std::ofstream(hosts) << first << "\n";
  const auto script = (dir.path / "discover.sh").string();
  // Once a run printed `later`, the next one makes DIR/hosts.seen: hvdrun has read the list.
  std::ofstream(script) << "if [ \"$(cat '" << hosts << "')\" = '" << later << "' ]; then [ -e '"
                        << hosts << ".read' ] && touch '" << hosts << ".seen'; touch '" << hosts
                        << ".read'; fi; cat '" << hosts << "'\n";
  flags.insert(flags.end(),
               {"--host-discovery-script", "/bin/sh " + script, "--discovery-interval", "0.2",
                kPython, job_script("horovod_elastic_job.py"), "--batches", "40", "--hosts-file",
                hosts, "--hosts-text", later, "--hosts-at", "12"});
  flags.insert(flags.end(), job_flags.begin(), job_flags.end());
  return flags;
}

// A slot added by the discovery script while Horovod workers train: hvdrun tells rank 0's
// notification service, every worker raises HostsUpdatedInterrupt at its next commit and asks
// for its place, and the next generation takes a new worker, which gets the state from rank 0.
TEST(Horovod, AnAddedSlotIsTakenInAtTheNextCommit) {
  REQUIRE_HOROVOD();
  TempDir dir;
  const auto r = run_hvdrun(
      hosts_changing_job(dir, "localhost:2", "localhost:3", {"-np", "2", "--max-np", "3"}),
      horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "slot 0 lists localhost:3 at batch 12")) << r.out;
  EXPECT_TRUE(contains(r.err, "told the Horovod workers that slots were added")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "every Horovod worker (2) asked for its place after the host "
                       "change; re-forming"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "generation 1: 3 workers, 1 of them new")) << r.err;
  // The two first workers re-formed once, without rolling back; the newcomer never did.
  expect_elastic_done(r.out, 40, {1, 1, 0});
  for (int rank = 0; rank < 2; ++rank) {
    const auto reset = rank_lines(r.out, rank, "reset ");
    ASSERT_EQ(reset.size(), 1u) << r.out;
    EXPECT_EQ(field(reset[0], "size"), "3") << reset[0];
  }
}

// Horovod's elastic examples on one machine: the discovery script names it twice, as
// localhost and 127.0.0.1. They run as one host with both slots (local ranks 0 and 1), and the
// job trains to its end unchanged.
TEST(Horovod, AnElasticJobOnTwoNamesOfThisMachineRunsAsOneHost) {
  REQUIRE_HOROVOD();
  TempDir dir;
  const std::string both = "localhost:1\n127.0.0.1:1";
  const auto r =
      run_hvdrun(hosts_changing_job(dir, both, both, {"-np", "2"}), horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(
      r.err, "'localhost' (discovery script '/bin/sh " + (dir.path / "discover.sh").string() +
                 "' line 1) and '127.0.0.1' (discovery script '/bin/sh " +
                 (dir.path / "discover.sh").string() +
                 "' line 2) both name this machine: they run as one host, 'localhost', "
                 "with 2 slots"))
      << r.err;
  const auto first = r.err.find("both name this machine");
  EXPECT_EQ(r.err.find("both name this machine", first + 1), std::string::npos) << r.err;
  expect_elastic_done(r.out, 40, {0, 0});
}

// A slot removed by the discovery script: its worker is told at the re-formation that it is
// not in the job and leaves; the two others finish.
TEST(Horovod, ARemovedSlotsWorkerLeavesAtTheNextCommit) {
  REQUIRE_HOROVOD();
  TempDir dir;
  const auto r = run_hvdrun(
      hosts_changing_job(dir, "localhost:3", "localhost:2", {"-np", "3", "--min-np", "2"}),
      horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "no longer lists the slots of rank 2")) << r.err;
  EXPECT_TRUE(contains(r.err, "told the Horovod workers that slots were removed")) << r.err;
  EXPECT_TRUE(contains(r.err, "rank 2 (host localhost) left the job with its slot")) << r.err;
  expect_elastic_done(r.out, 40, {1, 1});
  EXPECT_TRUE(rank_lines(r.out, 2, "done ").empty()) << r.out;
}

// The removed slot's worker dies (its host went away) before the others took the removal in
// (at their commit of batch 20, 0.8 s after the change): their collectives fail, and they
// re-form at once instead of waiting for a worker that is gone.
TEST(Horovod, ARemovedSlotsWorkerThatDiesFirstLeavesTheOthersToReForm) {
  REQUIRE_HOROVOD();
  TempDir dir;
  const auto r =
      run_hvdrun(hosts_changing_job(
                     dir, "localhost:3", "localhost:2",
                     {"-np", "3", "--min-np", "2", "-x", "HOROVOD_GLOO_TIMEOUT_SECONDS=5"},
                     {"--die-on-hosts-slot", "2", "--commit-every", "20", "--step-delay", "0.1"}),
                 horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "slot 2 dies with its host")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "rank 2 (host localhost) left the job with its slot: exited with "
                       "code 1"))
      << r.err;
  expect_elastic_done(r.out, 40, {1, 1});
  EXPECT_LT(r.seconds, 60.0);
}

// Rank 0 dies before the others enter hvd.elastic.run: they register their notification
// services under the names they started with, not their places in the generation formed
// meanwhile, and the new rank 0 is told when its host's cooldown ends: the job grows back.
TEST(Horovod, ARegistrationAfterAReFormationIsRankZeros) {
  REQUIRE_HOROVOD();
  const auto r =
      run_hvdrun({"-np", "3", "--min-np", "2", "--blacklist-cooldown-range", "1", "1", kPython,
                  job_script("horovod_elastic_job.py"), "--die-early-slot", "0", "--enter-delay",
                  "2", "--batches", "100", "--step-delay", "0.05", "--first-gloo-timeout", "5"},
                 horovod_env(), seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err,
                       "told the Horovod workers that slots were added (slots free again "
                       "after a cooldown)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "3 workers, 1 of them new")) << r.err;
  expect_elastic_done(r.out, 100, {2, 2, 0});
}

}  // namespace
}  // namespace hvdrun::itest
