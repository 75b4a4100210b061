// A per-node start (torchrun's model, Kubernetes): every node runs the same command with
// --nnodes N and its own --node-rank I (or the PET_* variables a PyTorchJob or TrainJob sets:
// PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_RDZV_ENDPOINT or
// PET_MASTER_ADDR/PET_MASTER_PORT). Node 0 runs the job on hosts "localhost" and node-1 ..
// node-(N-1), --nproc-per-node slots each; the others run a node agent that connects to the
// endpoint. The nodes share a secret from --rdzv-secret-file or HVDRUN_RDZV_SECRET.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// The name node `rank`'s agent gives the launcher, and its host's name in the job.
std::string per_node_host_name(int rank);

// The flags as given (nullopt: not given).
struct PerNodeFlags {
  std::optional<std::string> nnodes, node_rank, nproc_per_node, endpoint, secret_file;
};

// Fills spec.per_node, spec.hosts and spec.launcher when --nnodes or PET_NNODES is given; false
// otherwise. Throws UsageError naming the flag or variable: `hosts_given` (-H, --hostfile or a
// discovery script) too, a rank out of range, a missing endpoint or secret, a secret shorter
// than kMinNodesSecret bytes, PET_NNODES as MIN:MAX with MIN != MAX. A secret file that others
// may read is a warning in `notes` (as a mounted Kubernetes Secret is, by default), not an error.
inline constexpr std::size_t kMinNodesSecret = 16;
bool apply_per_node(JobSpec& spec, const PerNodeFlags& flags,
                    const std::map<std::string, std::string>& environment, bool hosts_given,
                    std::vector<std::string>& notes);

}  // namespace hvdrun::launcher
