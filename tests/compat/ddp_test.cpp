// Real PyTorch DDP programs (Debian's python3-torch, gloo backend, init_method env://) under
// the real hvdrun: 2 and 4 ranks train with a DistributedSampler to identical parameters, every
// torchrun variable is set as torchrun sets it, and two jobs started at once get different
// MASTER_PORTs.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/compat/compat_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

void expect_ddp_passed(const RunResult& r, int size) {
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::set<std::string> digests, ports, run_ids;
  for (int rank = 0; rank < size; ++rank) {
    const auto env = rank_lines(r.out, rank, "env ");
    ASSERT_EQ(env.size(), 1u) << r.out;
    const auto& line = env[0];
    const auto rank_text = std::to_string(rank);
    const auto size_text = std::to_string(size);
    EXPECT_EQ(field(line, "RANK"), rank_text) << line;
    EXPECT_EQ(field(line, "LOCAL_RANK"), rank_text) << line;
    EXPECT_EQ(field(line, "WORLD_SIZE"), size_text) << line;
    EXPECT_EQ(field(line, "LOCAL_WORLD_SIZE"), size_text) << line;
    EXPECT_EQ(field(line, "GROUP_RANK"), "0") << line;
    EXPECT_EQ(field(line, "GROUP_WORLD_SIZE"), "1") << line;
    EXPECT_EQ(field(line, "ROLE_RANK"), rank_text) << line;
    EXPECT_EQ(field(line, "ROLE_WORLD_SIZE"), size_text) << line;
    EXPECT_EQ(field(line, "ROLE_NAME"), "default") << line;
    EXPECT_EQ(field(line, "MASTER_ADDR"), "127.0.0.1") << line;
    EXPECT_EQ(field(line, "TORCHELASTIC_RESTART_COUNT"), "0") << line;
    EXPECT_EQ(field(line, "TORCHELASTIC_MAX_RESTARTS"), "0") << line;
    EXPECT_EQ(field(line, "OMP_NUM_THREADS"), "1") << line;
    ports.insert(field(line, "MASTER_PORT"));
    run_ids.insert(field(line, "TORCHELASTIC_RUN_ID"));
    const auto train = rank_lines(r.out, rank, "train ");
    ASSERT_EQ(train.size(), 1u) << r.out;
    EXPECT_EQ(field(train[0], "in_sync"), "True") << train[0];
    EXPECT_EQ(field(train[0], "samples"), std::to_string(480 / size)) << train[0];
    digests.insert(field(train[0], "params"));
  }
  EXPECT_EQ(digests.size(), 1u) << r.out;
  EXPECT_EQ(ports.size(), 1u) << r.out;
  EXPECT_EQ(run_ids.size(), 1u) << r.out;
  EXPECT_NE(*run_ids.begin(), "") << r.out;
  EXPECT_TRUE(r.err.find("hvdrun: OMP_NUM_THREADS=1 for every worker") != std::string::npos)
      << r.err;
}

TEST(PyTorchDdp, TwoRanksTrainToIdenticalParameters) {
  const auto r = run_hvdrun({"-np", "2", kPython, job_script("ddp_job.py")}, {}, seconds(120));
  expect_ddp_passed(r, 2);
}

TEST(PyTorchDdp, FourRanksTrainToIdenticalParameters) {
  const auto r = run_hvdrun({"-np", "4", kPython, job_script("ddp_job.py")}, {}, seconds(150));
  expect_ddp_passed(r, 4);
}

// Two jobs started at the same moment: each rank 0 binds its own MASTER_PORT.
TEST(PyTorchDdp, TwoJobsStartedTogetherDoNotCollide) {
  HvdrunProcess first({"-np", "2", kPython, job_script("ddp_job.py")});
  HvdrunProcess second({"-np", "2", kPython, job_script("ddp_job.py")});
  const auto a = first.finish(seconds(150));
  const auto b = second.finish(seconds(150));
  expect_ddp_passed(a, 2);
  expect_ddp_passed(b, 2);
  EXPECT_NE(field(rank_lines(a.out, 0, "env ")[0], "MASTER_PORT"),
            field(rank_lines(b.out, 0, "env ")[0], "MASTER_PORT"));
}

// torchrun's model, without its monitor delay: rank 1 crashes in the first run, every rank is
// stopped and started again with TORCHELASTIC_RESTART_COUNT=1 and a new MASTER_PORT, and the
// second run trains to identical parameters.
void expect_restarted_once(const std::vector<std::string>& flags) {
  std::vector<std::string> args = flags;
  for (const std::string& a : {std::string("-x"), std::string("DDP_FAIL_ONCE_RANK=1"),
                               std::string(kPython), job_script("ddp_job.py")}) {
    args.push_back(a);
  }
  const auto r = run_hvdrun(args, {}, seconds(180));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 1 crashing after step 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with code 7; restarting every rank (restart 1 of 1)"),
            std::string::npos)
      << r.err;
  std::set<std::string> digests, ports;
  for (int rank = 0; rank < 2; ++rank) {
    const auto env = rank_lines(r.out, rank, "env ");
    ASSERT_GE(env.size(), 1u) << r.out;
    EXPECT_EQ(field(env.back(), "TORCHELASTIC_RESTART_COUNT"), "1") << env.back();
    EXPECT_EQ(field(env.back(), "TORCHELASTIC_MAX_RESTARTS"), "1") << env.back();
    for (const auto& line : env) ports.insert(field(line, "MASTER_PORT"));
    const auto train = rank_lines(r.out, rank, "train ");
    ASSERT_EQ(train.size(), 1u) << r.out;  // only the second run got that far
    EXPECT_EQ(field(train[0], "in_sync"), "True") << train[0];
    digests.insert(field(train[0], "params"));
  }
  EXPECT_EQ(digests.size(), 1u) << r.out;
  EXPECT_EQ(ports.size(), 2u) << r.out;  // one per run
}

TEST(PyTorchDdp, ACrashIsRestartedOnceWithMaxRestarts) {
  expect_restarted_once({"-np", "2", "--max-restarts", "1"});
}

// The same in an elastic job: the restart takes the slots available (here the same two).
TEST(PyTorchDdp, ACrashIsRestartedOnceInAnElasticJobWithMaxRestarts) {
  expect_restarted_once({"-np", "2", "--min-np", "1", "--max-np", "2", "--max-restarts", "1"});
}

}  // namespace
}  // namespace hvdrun::itest
