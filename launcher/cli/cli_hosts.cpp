// apply_hosts (cli_parsed.h): the job's hosts and size from -H, --hostfile, a per-node start
// or the Slurm allocation, and the elastic flags checked against them.
#include <string_view>

#include "hvdrun/error.h"
#include "launcher/cli/cli_options.h"
#include "launcher/cli/cli_parsed.h"
#include "launcher/cli/cli_values.h"
#include "launcher/cli/per_node.h"
#include "launcher/plan/placement.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/slurm_allocation.h"

namespace hvdrun::launcher {
namespace {

// The elastic flags against each other and -np.
void check_elastic(JobSpec& spec, const Parsed& parsed) {
  auto& e = spec.elastic;
  if (!spec.elastic_job()) {
    for (const char* flag : {"exclude-stragglers", "straggler-margin", "spares"}) {
      if (parsed.given(flag)) {
        throw UsageError(parsed.spelled(flag) +
                         " acts in elastic jobs only (--min-np, --max-np or "
                         "--host-discovery-script): a static job cannot go on without a host");
      }
    }
    return;
  }
  if (e.exclude_stragglers && !spec.survivors_reform()) {
    throw UsageError(parsed.spelled("exclude-stragglers") +
                     " and --max-restarts cannot be used together: a straggler's host leaves "
                     "while the survivors re-form, which --max-restarts replaces by restarts");
  }
  if (e.spares > 0 && !spec.survivors_reform()) {
    throw UsageError(parsed.spelled("spares") +
                     " and --max-restarts cannot be used together: a spare takes a failed "
                     "worker's place while the survivors re-form, which --max-restarts replaces "
                     "by restarts");
  }
  const int min = e.min_np.value_or(spec.num_proc);
  const int max = e.max_np.value_or(spec.num_proc);
  if (min > spec.num_proc) {
    throw UsageError(parsed.spelled("min-np") + " " + std::to_string(min) + " is above -np " +
                     std::to_string(spec.num_proc));
  }
  if (max < spec.num_proc) {
    throw UsageError(parsed.spelled("max-np") + " " + std::to_string(max) + " is below -np " +
                     std::to_string(spec.num_proc));
  }
  e.min_np = min;
  e.max_np = max;
}

}  // namespace

void apply_hosts(JobSpec& spec, const Parsed& parsed, std::vector<std::string>& notes,
                 const std::map<std::string, std::string>& environment) {
  const auto hosts_flag = parsed.value("hosts");
  const auto hostfile = parsed.value("hostfile");
  if (hosts_flag && hostfile) {
    throw UsageError(parsed.spelled("hosts") + " and " + parsed.spelled("hostfile") +
                     " cannot be used together; give the hosts one way");
  }
  if (const auto script = parsed.value("host-discovery-script");
      script && (hosts_flag || hostfile)) {
    throw UsageError(parsed.spelled(hosts_flag ? "hosts" : "hostfile") + " and " +
                     parsed.spelled("host-discovery-script") +
                     " cannot be used together: the discovery script gives the hosts");
  }
  if (hosts_flag) spec.hosts = parse_hosts_flag(*hosts_flag);
  if (hostfile) spec.hosts = parse_hostfile(*hostfile, notes);
  bool from_slurm = false;
  const bool per_node = apply_per_node(
      spec,
      {parsed.value("nnodes"), parsed.value("node-rank"), parsed.value("nproc-per-node"),
       parsed.value("rdzv-endpoint"), parsed.value("rdzv-secret-file")},
      environment, hosts_flag || hostfile || parsed.value("host-discovery-script"), notes);
  if (!per_node && !hosts_flag && !hostfile && !parsed.value("host-discovery-script")) {
    if (auto allocation = slurm_allocation(environment)) {
      spec.hosts = std::move(allocation->hosts);
      from_slurm = true;
      if (!environment.contains(kSlurmMoved))  // said once, by the hvdrun that moved
        notes.push_back("hosts from Slurm job " + allocation->job_id + ": " + allocation->nodelist +
                        " (" + std::to_string(spec.hosts.size()) +
                        (spec.hosts.size() == 1 ? " host, " : " hosts, ") +
                        std::to_string(allocation->tasks) +
                        " slots); give -H or --hostfile "
                        "for others");
    }
  }
  if (const auto v = parsed.value("num-proc")) {
    spec.num_proc =
        parse_count(parsed.spelled("num-proc"), *v, kMaxSlots, "the number of processes");
  } else if (parsed.value("host-discovery-script")) {
    throw UsageError("-np is required with " + parsed.spelled("host-discovery-script") +
                     ": the job starts once the script gives that many slots");
  } else if (spec.hosts.empty()) {
    throw UsageError("-np is required without -H or --hostfile: " + std::string(kUsage));
  } else {
    long long total = 0;
    for (const auto& host : spec.hosts) total += host.slots;
    if (total > kMaxSlots) {
      throw UsageError("the hosts give " + std::to_string(total) + " slots: too many (at most " +
                       std::to_string(kMaxSlots) + "); give -np");
    }
    spec.num_proc = static_cast<int>(total);
  }
  const std::string launcher = parsed.value("launcher").value_or("auto");
  if (launcher != "ssh" && launcher != "slurm" && launcher != "auto") {
    throw UsageError(parsed.spelled("launcher") + " '" + launcher +
                     "': expected ssh, slurm or auto");
  }
  if (per_node && launcher != "auto") {
    throw UsageError(parsed.spelled("launcher") + " " + launcher +
                     " and --nnodes cannot be used together: with --nnodes every node starts its "
                     "own agent");
  }
  if (launcher == "slurm" && !from_slurm) {
    throw UsageError(parsed.spelled("launcher") +
                     " slurm: the hosts must come from a Slurm allocation (SLURM_JOB_ID set, no "
                     "-H, --hostfile or discovery script)");
  }
  if (!per_node) {
    spec.launcher = launcher == "slurm" || (launcher == "auto" && from_slurm)
                        ? JobSpec::Launcher::kSlurm
                        : JobSpec::Launcher::kSsh;
  }
  check_elastic(spec, parsed);
  // A per-node start is static: every node is one of the job's, its size fixed.
  if (per_node && spec.elastic_job()) {
    const char* flag = parsed.value("min-np") ? "--min-np" : "--max-np";
    throw UsageError(std::string(flag) +
                     " and --nnodes cannot be used together: a per-node start is not elastic "
                     "(every node is one of the job's; --max-restarts restarts it)");
  }
  // Every node of a per-node start is one of the job's: one that fails its checks fails it.
  if (spec.preflight.run && per_node && spec.preflight.exclude) {
    throw UsageError(
        "--preflight-exclude and --nnodes cannot be used together: each node starts on its own, "
        "and a node that fails its checks fails the job");
  }
  if (!spec.elastic.discovery_script.empty()) return;  // the script gives the hosts
  if (spec.hosts.empty()) spec.hosts.push_back(HostSpec{"", "localhost", spec.num_proc, "default"});
  check_enough_slots(spec.hosts, spec.num_proc);
}

}  // namespace hvdrun::launcher
