// Slurm's compressed host lists and task counts, as Slurm writes them into an allocation's
// environment (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE). Pure functions, bounded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher {

// Expands a host list: entries separated by commas outside brackets; an entry is text and
// bracket groups, a group holding numbers and ranges lo-hi separated by commas. A range keeps
// the width of its lower bound ("node[08-10]" -> node08 node09 node10); several groups
// multiply, the first outermost ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2); text may follow a
// group ("node[1-2]-ib"). Names are kept in order, duplicates too, as Slurm does. Throws
// UsageError naming the list and the fault (an unclosed bracket, a range whose bounds are not
// numbers or go down, an empty group, more than `max_hosts` names).
std::vector<std::string> expand_slurm_hostlist(std::string_view list,
                                               std::size_t max_hosts = 1'000'000);

// "2(x3),1" -> {2, 2, 2, 1}. Throws UsageError naming the value and the fault; at most
// `max_nodes` counts.
std::vector<int> expand_slurm_tasks_per_node(std::string_view value,
                                             std::size_t max_nodes = 1'000'000);

}  // namespace hvdrun::launcher
