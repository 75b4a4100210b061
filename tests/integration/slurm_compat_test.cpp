// Real PyTorch DDP and real Horovod programs inside a Slurm allocation: hvdrun with no host
// flags puts one rank on each of 3 nodes through their node agents (one srun step), and the
// ranks train to identical parameters; nothing is left on any node.
#include <gtest/gtest.h>

#include <set>

#include "tests/compat/compat_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/slurm_cluster.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

// Every rank's "train" line says it is in sync, and all hold the same parameters.
void expect_trained_alike(const RunResult& r, int size) {
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::set<std::string> digests;
  for (int rank = 0; rank < size; ++rank) {
    const auto train = rank_lines(r.out, rank, "train ");
    ASSERT_EQ(train.size(), 1u) << r.out;
    EXPECT_EQ(field(train[0], "in_sync"), "True") << train[0];
    digests.insert(field(train[0], "params"));
  }
  EXPECT_EQ(digests.size(), 1u) << r.out;
}

TEST(SlurmCompat, PyTorchDdpOnThreeNodes) {
  REQUIRE_SLURM();
  const auto r = HvdrunProcess("/usr/bin/salloc",
                               {"-N", "3", "-n", "3", HVDRUN_BINARY, "-x", "OMP_NUM_THREADS=1",
                                kPython, job_script("ddp_job.py")},
                               slurm_env(), "/dev/null")
                     .finish(seconds(150));
  expect_trained_alike(r, 3);
  for (int rank = 0; rank < 3; ++rank) {
    const auto env = rank_lines(r.out, rank, "env ");
    ASSERT_EQ(env.size(), 1u) << r.out;
    EXPECT_EQ(field(env[0], "WORLD_SIZE"), "3") << env[0];
    EXPECT_EQ(field(env[0], "GROUP_RANK"), std::to_string(rank)) << env[0];  // one node each
    EXPECT_EQ(field(env[0], "LOCAL_RANK"), "0") << env[0];
  }
  EXPECT_TRUE(wait_nodes_idle(seconds(10)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

TEST(SlurmCompat, HorovodOnThreeNodes) {
  REQUIRE_SLURM();
  REQUIRE_HOROVOD();
  auto env = slurm_env();
  env.merge(horovod_env());
  const auto r = HvdrunProcess("/usr/bin/salloc",
                               {"-N", "3", "-n", "3", HVDRUN_BINARY, kPython,
                                job_script("horovod_job.py"), "--steps", "10"},
                               env, "/dev/null")
                     .finish(seconds(150));
  expect_trained_alike(r, 3);
  for (int rank = 0; rank < 3; ++rank) {
    const auto topology = rank_lines(r.out, rank, "topology ");
    ASSERT_EQ(topology.size(), 1u) << r.out;
    EXPECT_EQ(field(topology[0], "host"), "hvds-n" + std::to_string(rank + 1)) << topology[0];
    EXPECT_EQ(field(topology[0], "cross_size"), "3") << topology[0];
  }
  EXPECT_TRUE(wait_nodes_idle(seconds(10)).empty()) << joined(wait_nodes_idle(seconds(0)));
}

}  // namespace
}  // namespace hvdrun::itest
