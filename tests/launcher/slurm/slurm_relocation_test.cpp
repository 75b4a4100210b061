// When hvdrun moves into its Slurm allocation, and the srun step that moves it.
#include "launcher/slurm/slurm_relocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;

JobSpec slurm_job(const std::string& first_host) {
  JobSpec spec;
  spec.launcher = JobSpec::Launcher::kSlurm;
  spec.hosts = {{"", first_host, 2, "SLURM_JOB_NODELIST"}, {"", "10.255.255.2", 2, ""}};
  return spec;
}

// 10.255.255.1: a numeric address of no interface here (no DNS lookup).
TEST(SlurmRelocation, OnlyAnHvdrunOutsideItsAllocationMoves) {
  LocalHosts local;
  const std::map<std::string, std::string> login{{"SLURM_JOB_ID", "7"}};
  EXPECT_TRUE(must_move_to_allocation(slurm_job("10.255.255.1"), login, local));
  EXPECT_FALSE(must_move_to_allocation(slurm_job("localhost"), login, local))
      << "on the first node (an sbatch script)";
  auto in_step = login;
  in_step["SLURMD_NODENAME"] = "node3";
  EXPECT_FALSE(must_move_to_allocation(slurm_job("10.255.255.1"), in_step, local));
  auto moved = login;
  moved[kSlurmMoved] = "1";
  EXPECT_FALSE(must_move_to_allocation(slurm_job("10.255.255.1"), moved, local));
  auto ssh_job = slurm_job("10.255.255.1");
  ssh_job.launcher = JobSpec::Launcher::kSsh;
  EXPECT_FALSE(must_move_to_allocation(ssh_job, login, local));
  auto dry_run = slurm_job("10.255.255.1");
  dry_run.dry_run = true;
  EXPECT_FALSE(must_move_to_allocation(dry_run, login, local));
}

TEST(SlurmRelocation, TheStepRunsTheSameCommandOnTheFirstNode) {
  EXPECT_THAT(srun_move_command("srun", false, "hvds-n1", "/opt/hvdrun", {"-np", "4", "./train"}),
              ElementsAre("srun", "--nodes=1", "--ntasks=1", "--nodelist=hvds-n1", "--mpi=none",
                          "--cpu-bind=none", "--job-name=hvdrun", "--kill-on-bad-exit=1", "--quiet",
                          "--overlap", "/opt/hvdrun", "-np", "4", "./train"));
  EXPECT_THAT(srun_move_command("srun", true, "n1", "h", {}),
              ::testing::Contains("--external-launcher"));
}

}  // namespace
}  // namespace hvdrun::launcher
