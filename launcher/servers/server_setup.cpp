// The rendezvous servers' settings for a job (server_setup.h).
#include "launcher/servers/server_setup.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "launcher/plan/open_files.h"

namespace hvdrun::launcher {

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

}  // namespace hvdrun::launcher
