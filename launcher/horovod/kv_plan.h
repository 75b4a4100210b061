// KvPlan: the sizes of Horovod's planned rendezvous scopes for one (re)start of a job.
#pragma once

#include <map>
#include <string>

namespace hvdrun::launcher::horovod {

// Scope "global" has global_size members, "local_<host>" local_sizes[host] (host as in
// HOROVOD_HOSTNAME) and "cross_<local_rank>" cross_sizes[local_rank]. A size below 1 leaves
// that scope unplanned (an ad-hoc scope).
struct KvPlan {
  int global_size = 0;
  std::map<std::string, int> local_sizes;
  std::map<int, int> cross_sizes;
};

}  // namespace hvdrun::launcher::horovod
