// The Slurm test cluster of the Slurm tests (scripts/slurm-test-cluster.sh: slurmctld and 3
// slurmd "nodes" hvds-n1..3 in network namespaces, brought up by the slurm_cluster fixture):
// whether it is up, the environment its commands need, and what runs on its nodes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace hvdrun::itest {

inline constexpr const char* kSlurmConf = "/tmp/hvds-slurm/slurm.conf";

bool cluster_up();

#define REQUIRE_SLURM()                                                                \
  do {                                                                                 \
    if (::getuid() != 0) GTEST_SKIP() << "the Slurm test cluster needs root";          \
    ASSERT_TRUE(cluster_up()) << "the Slurm test cluster is not up: "                  \
                                 "scripts/slurm-test-cluster.sh up 3 (ctest does it)"; \
  } while (0)

// SLURM_CONF for salloc, sbatch and srun.
std::map<std::string, std::string> slurm_env();
// Pids in node i's network namespace other than its slurmd ("123 (name)").
std::vector<std::string> node_leftovers(int node);
// Waits until no node runs anything but its slurmd; what is left at the deadline.
std::vector<std::string> wait_nodes_idle(std::chrono::milliseconds deadline);
std::string joined(const std::vector<std::string>& items);

}  // namespace hvdrun::itest
