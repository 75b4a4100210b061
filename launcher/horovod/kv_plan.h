// KvPlan: the sizes of Horovod's planned rendezvous scopes for one (re)start of a job, and the
// answers an elastic Horovod job gives its survivors.
#pragma once

#include <map>
#include <string>

#include "common/slot.h"

namespace hvdrun::launcher::horovod {

// Scope "global" has global_size members, "local_<host>" local_sizes[host] (host as in
// HOROVOD_HOSTNAME) and "cross_<local_rank>" cross_sizes[local_rank]. A size below 1 leaves
// that scope unplanned (an ad-hoc scope).
// `survivors`: in an elastic job, each worker of the previous generation that is in this one,
// by its name there ("<HOROVOD_HOSTNAME>:<HOROVOD_LOCAL_RANK>", what its GET /rank_and_size
// asks with), to its slot here; the size is global_size.
struct KvPlan {
  int global_size = 0;
  std::map<std::string, int> local_sizes;
  std::map<int, int> cross_sizes;
  std::map<std::string, Slot> survivors;
};

}  // namespace hvdrun::launcher::horovod
