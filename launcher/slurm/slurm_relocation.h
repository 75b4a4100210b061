// Under `salloc` on a login node, hvdrun would run the job (rank 0's rendezvous, the agent
// port) on a machine outside the allocation, which the nodes may not reach and where no rank
// runs. It moves itself to the allocation's first node instead: one srun step (1 task there,
// --overlap or --external-launcher as for the agents) runs the same hvdrun command, told the
// allocation this hvdrun saw (inside the step, Slurm's own variables name only the step's
// node) and that it was moved (it never moves again). This hvdrun stays as srun's parent and
// exits with the step's status; the signals it gets (INT, TERM, HUP, USR1, USR2, QUIT) go to
// the moved hvdrun over a connection of their own (moved_control.h), so that they act there
// as they would here.
#pragma once

#include <map>
#include <string>

#include "launcher/spec/job_spec.h"
#include "launcher/spec/local_host.h"
#include "launcher/spec/slurm_allocation.h"

namespace hvdrun::launcher {

// A Slurm job whose hvdrun runs outside its allocation (not in a step, not on its first node),
// and was not moved already.
bool must_move_to_allocation(const JobSpec& spec, const std::map<std::string, std::string>& env,
                             LocalHosts& local_hosts);

// srun's argv for the move (`hvdrun`: the path of hvdrun on the node).
std::vector<std::string> srun_move_command(const std::string& srun, bool external_launcher,
                                           const std::string& node, const std::string& hvdrun,
                                           const std::vector<std::string>& args);

// Runs the job from the allocation's first node; returns hvdrun's exit status.
int run_moved_to_allocation(const JobSpec& spec, const std::map<std::string, std::string>& env);

}  // namespace hvdrun::launcher
