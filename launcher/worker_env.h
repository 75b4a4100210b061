// The environment of one worker: the launcher's environment, then -x entries, then the
// per-slot values (HVDRUN_*, HOROVOD_*, torchrun's RANK/...), so per-slot values always win
// over inherited ones.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "job_spec.h"
#include "placement.h"

namespace hvdrun::launcher {

struct RendezvousInfo {
  std::string addr;  // address workers connect to
  std::uint16_t port = 0;
  std::string secret;
  std::string master_addr;  // MASTER_ADDR for torch (rank 0's host address)
  std::uint16_t master_port = 0;
};

// Returns "NAME=VALUE" strings, sorted by name, one per name.
std::vector<std::string> worker_environment(const std::map<std::string, std::string>& launcher_env,
                                            const JobSpec& spec, const Slot& slot,
                                            const RendezvousInfo& rendezvous);

}  // namespace hvdrun::launcher
