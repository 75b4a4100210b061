// The environment of one worker, in layers, each over the ones before it:
//   1. hvdrun's own environment (minus inherited HVDRUN_*);
//   2. the HOROVOD_* variables of horovodrun's tuning flags and --config-file;
//   3. HOROVOD_GLOO_IFACE and NCCL_SOCKET_IFNAME: the interface of this host's route to hvdrun
//      (`lo` for a local job), replacing inherited values as horovodrun does;
//   4. -x entries (the user's explicit choice wins over all of the above);
//   5. defaults that never replace a value the user has: PYTHONUNBUFFERED=1,
//      TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and NCCL_ASYNC_ERROR_HANDLING=1 (its name before
//      PyTorch 2.2), and OMP_NUM_THREADS=1 where workers share a host;
//   6. the per-slot and per-job values, which always win: HVDRUN_*, Horovod's topology and
//      Gloo rendezvous (HOROVOD_RANK.., HOROVOD_CONTROLLER=gloo, HOROVOD_GLOO_RENDEZVOUS_*),
//      torchrun's (RANK, WORLD_SIZE, .., MASTER_ADDR/PORT, TORCHELASTIC_*).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/placement.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

struct RendezvousInfo {
  std::string addr;  // address workers connect to
  std::uint16_t port = 0;
  std::string secret;
  std::string master_addr;  // MASTER_ADDR for torch (rank 0's host address)
  std::uint16_t master_port = 0;
  std::uint16_t horovod_port = 0;  // Horovod's HTTP rendezvous on `addr`; 0: none
  std::string gloo_iface;          // interface of `addr`'s route; empty: none found
  bool iface_by_agent = false;     // a remote host: its agent picks the interface there
  std::string run_id;              // TORCHELASTIC_RUN_ID
  int restart_count = 0;           // TORCHELASTIC_RESTART_COUNT: the job's generation
  int size = 0;                    // workers of the generation; 0: JobSpec::num_proc
  std::string stacks_dir{};        // this machine's workers: the Python hook's (python_hook.h)
};

// True if the workers' OMP_NUM_THREADS is hvdrun's default (1) for a slot with this many
// workers on its host: more than one, and the user set no value (-x or hvdrun's environment).
bool omp_threads_defaulted(const std::map<std::string, std::string>& launcher_env,
                           const JobSpec& spec, int local_size);

// Returns "NAME=VALUE" strings, sorted by name, one per name.
// `worker_key` is the worker's HVDRUN_SLOT (unique in the job); default: its rank, as for the
// first workers of a job.
std::vector<std::string> worker_environment(const std::map<std::string, std::string>& launcher_env,
                                            const JobSpec& spec, const Slot& slot,
                                            const RendezvousInfo& rendezvous,
                                            std::optional<std::uint32_t> worker_key = {});

// torchrun's notice, once per job, when hvdrun sets OMP_NUM_THREADS=1 for its workers.
void note_omp_default(const JobSpec& spec, const std::vector<Slot>& slots,
                      const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
