// The environment of one worker, layer by layer (worker_env.h).
#include "launcher/workers/worker_env.h"

#include <algorithm>

#include "launcher/output/logging.h"
#include "launcher/spec/slurm_allocation.h"
#include "launcher/stacks/python_hook.h"
#include "rendezvous/env_names.h"

namespace hvdrun::launcher {
namespace {

// "addr:port", IPv6 in brackets.
std::string host_port(const std::string& addr, std::uint16_t port) {
  const bool needs_brackets = addr.find(':') != std::string::npos && !addr.starts_with('[');
  return (needs_brackets ? "[" + addr + "]" : addr) + ":" + std::to_string(port);
}

void set_slot_values(std::map<std::string, std::string>& env, const JobSpec& spec, const Slot& slot,
                     const RendezvousInfo& rendezvous, std::uint32_t worker_key) {
  const auto str = [](auto value) { return std::to_string(value); };
  env[env::kRendezvousAddr] = host_port(rendezvous.addr, rendezvous.port);
  env[env::kSecret] = rendezvous.secret;
  env[env::kSlot] = str(worker_key);
  if (spec.survivors_reform()) {
    env[env::kElastic] = "1";
    env[env::kElasticTimeout] = str(spec.elastic.timeout.count());
  }
  env[env::kHostname] = slot.host;
  env[env::kStartTimeout] = str(spec.start_timeout.count());
  env[env::kLogLevel] = spec.log_level;
  if (!spec.network_interfaces.empty()) env[env::kNetworkInterface] = spec.network_interfaces[0];
  if (spec.timeline_collectives) env[env::kTimelineCollectives] = "1";

  const int size = rendezvous.size > 0 ? rendezvous.size : spec.num_proc;
  env[env::kHorovodRank] = str(slot.rank);
  env[env::kHorovodSize] = str(size);
  env[env::kHorovodLocalRank] = str(slot.local_rank);
  env[env::kHorovodLocalSize] = str(slot.local_size);
  env[env::kHorovodCrossRank] = str(slot.cross_rank);
  env[env::kHorovodCrossSize] = str(slot.cross_size);
  env[env::kHorovodHostname] = slot.host;

  env[env::kTorchRank] = str(slot.rank);
  env[env::kTorchWorldSize] = str(size);
  env[env::kTorchLocalRank] = str(slot.local_rank);
  env[env::kTorchLocalWorldSize] = str(slot.local_size);
  env[env::kTorchGroupRank] = str(slot.node_rank);
  env[env::kTorchGroupWorldSize] = str(slot.node_count);
  env[env::kTorchRoleRank] = str(slot.rank);
  env[env::kTorchRoleWorldSize] = str(size);
  env[env::kTorchRoleName] = "default";
  env[env::kTorchRunId] = rendezvous.run_id;
  env[env::kTorchRestartCount] = str(rendezvous.restart_count);
  env[env::kTorchMaxRestarts] = str(spec.max_restarts);
  if (!rendezvous.master_addr.empty()) env[env::kTorchMasterAddr] = rendezvous.master_addr;
  if (rendezvous.master_port != 0) env[env::kTorchMasterPort] = str(rendezvous.master_port);

  if (rendezvous.horovod_port != 0) {
    env[env::kHorovodController] = "gloo";
    env[env::kHorovodCpuOperations] = "gloo";
    env[env::kHorovodGlooRendezvousAddr] = rendezvous.addr;
    env[env::kHorovodGlooRendezvousPort] = str(rendezvous.horovod_port);
    if (spec.survivors_reform()) env[env::kHorovodElastic] = "1";
  }
}

// The variables the launcher sets for each worker: an inherited value (hvdrun started from
// inside another job) is never passed on. libhvdrun's settings (HVDRUN_TIMEOUT,
// HVDRUN_BACKEND, HVDRUN_FUSION_*, ...) pass like any other variable.
bool launcher_owned(const std::string& name) {
  if (name == env::kNodesSecret || name.starts_with(env::kSlurmMovePrefix)) return true;
  for (const char* owned :
       {env::kRendezvousAddr, env::kSecret, env::kSlot, env::kHostname, env::kStartTimeout,
        env::kLogLevel, env::kNetworkInterface, env::kElastic, env::kElasticTimeout, env::kSpare,
        env::kTimelineCollectives, kStacksDirEnv, kStacksSignalEnv,
        // The move of hvdrun into its Slurm allocation: for hvdrun alone.
        kSlurmMoved, kSlurmMovedNodes, kSlurmMovedTasks, kSlurmControlPort, kSlurmControlSecret}) {
    if (name == owned) return true;
  }
  return false;
}

bool user_sets(const std::map<std::string, std::string>& launcher_env, const JobSpec& spec,
               const std::string& name) {
  return launcher_env.contains(name) ||
         std::any_of(spec.env_forward.begin(), spec.env_forward.end(),
                     [&](const EnvForward& forward) { return forward.name == name; });
}

}  // namespace

bool omp_threads_defaulted(const std::map<std::string, std::string>& launcher_env,
                           const JobSpec& spec, int local_size) {
  return local_size > 1 && !user_sets(launcher_env, spec, env::kOmpNumThreads);
}

std::vector<std::string> worker_environment(const std::map<std::string, std::string>& launcher_env,
                                            const JobSpec& spec, const Slot& slot,
                                            const RendezvousInfo& rendezvous,
                                            std::optional<std::uint32_t> worker_key) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : launcher_env) {
    if (!launcher_owned(name)) env.emplace(name, value);
  }
  for (const auto& [name, value] : spec.tuning_env) env[name] = value;
  for (const auto* name : {env::kHorovodGlooIface, env::kNcclSocketIfname}) {
    if (rendezvous.iface_by_agent) {
      env.erase(name);  // the remote agent sets its host's
    } else if (!rendezvous.gloo_iface.empty()) {
      env[name] = rendezvous.gloo_iface;
    }
  }
  for (const auto& forward : spec.env_forward) {
    if (forward.value) {
      env[forward.name] = *forward.value;
    } else if (const auto it = launcher_env.find(forward.name); it != launcher_env.end()) {
      env[forward.name] = it->second;
    }
  }
  env.try_emplace("PYTHONUNBUFFERED", "1");
  env.try_emplace(env::kTorchNcclAsyncErrorHandling, "1");
  env.try_emplace(env::kNcclAsyncErrorHandling, "1");
  if (omp_threads_defaulted(launcher_env, spec, slot.local_size)) {
    env.try_emplace(env::kOmpNumThreads, "1");
  }
  set_slot_values(env, spec, slot, rendezvous,
                  worker_key.value_or(static_cast<std::uint32_t>(slot.rank)));
  if (!rendezvous.stacks_dir.empty()) {  // the Python hook first on the path (python_hook.h)
    auto& path = env["PYTHONPATH"];
    path = hooked_pythonpath(rendezvous.stacks_dir, path);
    env[kStacksDirEnv] = rendezvous.stacks_dir;
    env[kStacksSignalEnv] = std::to_string(kStacksSignal);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
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
