// The hosts of a Slurm allocation (slurm_allocation.h).
#include "launcher/spec/slurm_allocation.h"

#include "hvdrun/error.h"
#include "launcher/spec/slurm_hostlist.h"

namespace hvdrun::launcher {
namespace {

const std::string* find(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

std::optional<SlurmAllocation> slurm_allocation(const std::map<std::string, std::string>& env) {
  const std::string* job = find(env, "SLURM_JOB_ID");
  if (!job) return std::nullopt;
  const bool in_step = find(env, "SLURM_STEP_ID") != nullptr;
  std::string list_name, counts_name;
  // hvdrun moved from outside the allocation into its step on the first node: the allocation
  // is the one it saw before (the step's own variables name only that node).
  const bool moved = find(env, kSlurmMoved) != nullptr;
  if (moved) {
    list_name = kSlurmMovedNodes;
    counts_name = kSlurmMovedTasks;
  }
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (moved) break;
    if (std::string(name).starts_with("SLURM_STEP") && !in_step) continue;
    if (find(env, name)) {
      list_name = name;
      break;
    }
  }
  if (list_name.empty() || !find(env, list_name)) {
    throw UsageError("SLURM_JOB_ID=" + *job +
                     " is set but SLURM_JOB_NODELIST is not: give the hosts with -H or "
                     "--hostfile");
  }
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (moved) break;
    if (std::string(name).starts_with("SLURM_STEP") && list_name != "SLURM_STEP_NODELIST") continue;
    if (find(env, name)) {
      counts_name = name;
      break;
    }
  }
  SlurmAllocation out;
  out.job_id = *job;
  out.nodelist = *find(env, list_name);
  std::vector<std::string> nodes;
  try {
    nodes = expand_slurm_hostlist(out.nodelist);
  } catch (const UsageError& e) {
    throw UsageError(list_name + ": " + e.what());
  }
  std::vector<int> counts(nodes.size(), 1);
  if (!counts_name.empty()) {
    try {
      counts = expand_slurm_tasks_per_node(*find(env, counts_name));
    } catch (const UsageError& e) {
      throw UsageError(counts_name + ": " + e.what());
    }
    if (counts.size() != nodes.size()) {
      throw UsageError(counts_name + "=" + *find(env, counts_name) + " counts " +
                       std::to_string(counts.size()) + " nodes, " + list_name + " names " +
                       std::to_string(nodes.size()));
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    out.hosts.push_back({"", nodes[i], counts[i], list_name});
    out.tasks += counts[i];
  }
  return out;
}

}  // namespace hvdrun::launcher
