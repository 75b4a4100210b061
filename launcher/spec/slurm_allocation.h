// The hosts of a Slurm allocation, read from the environment Slurm gives a job: inside
// `salloc` or an `sbatch` script, SLURM_JOB_NODELIST (or SLURM_NODELIST) and
// SLURM_TASKS_PER_NODE; inside a step (SLURM_STEP_ID set), the step's own SLURM_STEP_NODELIST
// and SLURM_STEP_TASKS_PER_NODE, which can be smaller than the job; in an hvdrun moved into
// its allocation (slurm_relocation.h), HVDRUN_SLURM_NODES and HVDRUN_SLURM_TASKS. Pure: no
// Slurm command runs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// Set in the environment of an hvdrun moved into its allocation: 1, the allocation's node
// names (comma-separated) and their task counts.
inline constexpr const char* kSlurmMoved = "HVDRUN_SLURM_MOVED";
inline constexpr const char* kSlurmMovedNodes = "HVDRUN_SLURM_NODES";
inline constexpr const char* kSlurmMovedTasks = "HVDRUN_SLURM_TASKS";
// The port the moved hvdrun connects back to for the signals, and the secret it sends first
// (moved_control.h).
inline constexpr const char* kSlurmControlPort = "HVDRUN_SLURM_CONTROL_PORT";
inline constexpr const char* kSlurmControlSecret = "HVDRUN_SLURM_CONTROL_SECRET";

struct SlurmAllocation {
  std::string job_id;
  std::vector<HostSpec> hosts;  // one per node, its slots its task count; origin names the variable
  int tasks = 0;                // the sum of the slots: the default -np
  std::string nodelist;         // as Slurm wrote it, for messages
};

// nullopt unless SLURM_JOB_ID is set. Throws UsageError naming the variable when a value is
// malformed or the counts do not match the nodes.
std::optional<SlurmAllocation> slurm_allocation(const std::map<std::string, std::string>& env);

}  // namespace hvdrun::launcher
