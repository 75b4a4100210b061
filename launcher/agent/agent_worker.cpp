// Starting the remote agent's worker (agent_worker.h) with the launcher's spawner
// (process.h): own process group, SIGKILL when the agent dies, exec errors reported.
#include "launcher/agent/agent_worker.h"

#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/interfaces.h"
#include "launcher/process/process.h"
#include "rendezvous/env_names.h"

namespace hvdrun::launcher::agent {

std::vector<std::string> overlay_environment(const std::vector<std::string>& base,
                                             const std::vector<std::string>& overlay) {
  std::vector<std::string> out;
  std::unordered_map<std::string, std::size_t> index;
  const auto put = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    if (auto it = index.find(name); it != index.end()) {
      out[it->second] = entry;
    } else {
      index.emplace(name, out.size());
      out.push_back(entry);
    }
  };
  for (const auto& entry : base) put(entry);
  for (const auto& entry : overlay) put(entry);
  return out;
}

std::vector<std::string> with_host_interfaces(std::vector<std::string> env) {
  const auto value_of = [&env](std::string_view name) -> const std::string* {
    for (const auto& entry : env) {
      if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
        return &entry;
      }
    }
    return nullptr;
  };
  const auto* addr = value_of(env::kHorovodGlooRendezvousAddr);
  if (addr == nullptr) return env;
  const auto source = route_source_address(addr->substr(addr->find('=') + 1));
  const auto iface =
      source.empty() ? std::string() : interface_with_address(source, ipv4_interfaces());
  if (iface.empty()) return env;
  for (const auto* name : {env::kHorovodGlooIface, env::kNcclSocketIfname}) {
    if (value_of(name) == nullptr) env.push_back(std::string(name) + "=" + iface);
  }
  return env;
}

Spawned begin_agent_worker(const WorkerSpec& spec, const std::vector<std::string>& env,
                           const sigset_t& child_mask) {
  SpawnOptions options;
  options.child_mask = &child_mask;
  return spawn(spec.argv, env, options);
}

AgentWorker finish_agent_worker(Spawned& spawned) {
  AgentWorker worker;
  worker.exec_errno = exec_error(spawned);
  worker.out = std::move(spawned.out);
  worker.err = std::move(spawned.err);
  worker.pid = spawned.child.release();
  return worker;
}

}  // namespace hvdrun::launcher::agent
