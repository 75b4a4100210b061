// Starting the remote agent's worker (agent_worker.h) with the launcher's spawner
// (process.h): own process group, SIGKILL when the agent dies, exec errors reported.
#include "agent_worker.h"

#include <unordered_map>
#include <utility>

#include "process.h"

namespace hvdrun::launcher::ssh {

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

AgentWorker start_agent_worker(const AgentSpec& spec, const std::vector<std::string>& env,
                               const sigset_t& child_mask) {
  SpawnOptions options;
  options.child_mask = &child_mask;
  Spawned spawned = spawn(spec.argv, env, options);
  AgentWorker worker;
  worker.exec_errno = exec_error(spawned);
  worker.out = std::move(spawned.out);
  worker.err = std::move(spawned.err);
  worker.pid = spawned.child.release();
  return worker;
}

}  // namespace hvdrun::launcher::ssh
