// run_job's preparations (job_setup.h).
#include "launcher/job_setup.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>

#include "hvdrun/error.h"
#include "launcher/hosts.h"
#include "launcher/local_host.h"
#include "launcher/logging.h"
#include "launcher/open_files.h"
#include "launcher/worker_env.h"

namespace hvdrun::launcher {

std::vector<std::size_t> remote_hosts(const JobSpec& spec, const std::vector<Slot>& slots) {
  std::vector<std::size_t> out;
  std::optional<std::size_t> local;  // the entry that names this machine
  std::optional<std::size_t> last;
  for (const auto& slot : slots) {
    if (last == slot.host_index) continue;  // slots come host by host
    last = slot.host_index;
    const HostSpec& host = spec.hosts[slot.host_index];
    if (!is_local_host(host.name)) {
      out.push_back(slot.host_index);
    } else if (local) {
      const HostSpec& first = spec.hosts[*local];
      throw UsageError(host.origin + ": " + quoted(first.name) + " (" + first.origin + ") and " +
                       quoted(host.name) + " are both this machine; list it once with its " +
                       "total slots (local ranks and GPU pinning count one machine's slots)");
    } else {
      local = slot.host_index;
    }
  }
  return out;
}

horovod::KvPlan horovod_plan(const std::vector<Slot>& slots) {
  horovod::KvPlan plan;
  plan.global_size = static_cast<int>(slots.size());
  for (const auto& s : slots) {
    plan.local_sizes[s.host] = s.local_size;
    plan.cross_sizes[s.local_rank] = s.cross_size;
  }
  return plan;
}

WorkerCount count_workers(const std::vector<Slot>& slots, const std::vector<std::size_t>& remote,
                          std::size_t most) {
  WorkerCount count;
  for (const auto& slot : slots) {
    const bool is_remote = std::find(remote.begin(), remote.end(), slot.host_index) != remote.end();
    ++(is_remote ? count.remote : count.local);
  }
  if (most > count.total()) count.local += most - count.total();
  return count;
}

std::chrono::milliseconds rank_query_hold(std::chrono::seconds elastic_timeout) {
  constexpr std::chrono::seconds kLauncherDecidesFirst{30};
  return elastic_timeout + kLauncherDecidesFirst;
}

horovod::KvServerOptions horovod_server_options(const std::string& bind_address,
                                                WorkerCount workers, std::size_t open_file_limit) {
  constexpr std::size_t kPerPeer = 256;  // a Gloo TCP address is 136 bytes
  const std::size_t size = workers.total();
  horovod::KvServerOptions options;
  options.bind_address = bind_address;
  options.max_body_bytes =
      std::clamp<std::size_t>((64u << 10) + size * kPerPeer, 64u << 10, options.max_body_bytes);
  options.max_stored_bytes = std::max(options.max_stored_bytes, 2 * size * size * kPerPeer);
  options.max_connections = std::min(std::max(options.max_connections, 4 * size),
                                     credential_free_connections(open_file_limit, workers));
  return options;
}

std::size_t rendezvous_max_unauthenticated(WorkerCount workers, std::size_t open_file_limit) {
  const rdzv::ServerOptions defaults;
  const std::size_t others = credential_free_connections(open_file_limit, workers);
  const std::size_t most = std::max(defaults.max_unauthenticated, workers.total());
  return std::min(most, workers.total() + std::min(others, most));  // others may be SIZE_MAX
}

std::string make_run_id() {
  std::random_device random;
  char text[32];
  std::snprintf(text, sizeof text, "hvdrun-%08x%08x", random(), random());
  return text;
}

void note_omp_default(const JobSpec& spec, const std::vector<Slot>& slots,
                      const std::map<std::string, std::string>& environment) {
  for (const auto& slot : slots) {
    if (!omp_threads_defaulted(environment, spec, slot.local_size)) continue;
    note("OMP_NUM_THREADS=1 for every worker (" + std::to_string(slot.local_size) + " share host " +
         slot.host + "); set it with -x OMP_NUM_THREADS=N to tune");
    return;
  }
}

}  // namespace hvdrun::launcher
