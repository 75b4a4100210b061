// Per-node starts (per_node.h): flags and PET_* variables -> the job's hosts and endpoint.
#include "launcher/cli/per_node.h"

#include <sys/stat.h>

#include <cstdio>
#include <optional>

#include "hvdrun/error.h"
#include "launcher/cli/cli_values.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/user_file.h"
#include "rendezvous/env_names.h"

namespace hvdrun::launcher {
namespace {

constexpr int kMaxNodes = 65'536;

// A flag's value, else the variable's; `from` names where it came from for messages.
std::optional<std::string> pick(const std::optional<std::string>& flag, const char* flag_name,
                                const std::map<std::string, std::string>& env, const char* var,
                                std::string& from) {
  if (flag) {
    from = flag_name;
    return flag;
  }
  const auto it = env.find(var);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  from = var;
  return it->second;
}

// A warning when the secret file `path` can be read by its group or by others; none otherwise.
std::optional<std::string> readable_by_others(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & (S_IRGRP | S_IROTH)) == 0)
    return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "warning: --rdzv-secret-file '" + path + "' can be read by other users (mode " + mode +
         "): whoever reads it can join this job's nodes; make it readable by its owner only "
         "(chmod 600; a Kubernetes Secret: defaultMode 0400)";
}

}  // namespace

std::string per_node_host_name(int rank) {
  return "node-" + std::to_string(rank);
}

bool apply_per_node(JobSpec& spec, const PerNodeFlags& flags,
                    const std::map<std::string, std::string>& environment, bool hosts_given,
                    std::vector<std::string>& notes) {
  std::string from;
  auto nnodes_text = pick(flags.nnodes, "--nnodes", environment, "PET_NNODES", from);
  if (!nnodes_text) return false;
  if (hosts_given) {
    throw UsageError(from +
                     " and -H, --hostfile or a discovery script cannot be used together: "
                     "with " +
                     from + " every node runs hvdrun itself");
  }
  if (const auto colon = nnodes_text->find(':'); colon != std::string::npos) {
    if (nnodes_text->substr(0, colon) != nnodes_text->substr(colon + 1)) {
      throw UsageError(from + "=" + *nnodes_text +
                       ": a range of node counts is not supported; give one number");
    }
    nnodes_text = nnodes_text->substr(0, colon);
  }
  auto& p = spec.per_node;
  p.nnodes = parse_count(from, *nnodes_text, kMaxNodes, "the number of nodes");
  if (const auto rank = pick(flags.node_rank, "--node-rank", environment, "PET_NODE_RANK", from)) {
    p.node_rank = parse_count(from, *rank, p.nnodes - 1, "this node's rank (0 to N-1)", 0);
  }
  int nproc = 1;
  if (const auto n =
          pick(flags.nproc_per_node, "--nproc-per-node", environment, "PET_NPROC_PER_NODE", from)) {
    nproc = parse_count(from, *n, kMaxSlots, "the workers of each node");
  }
  spec.hosts.clear();
  spec.hosts.push_back({"", "localhost", nproc, "--nnodes"});
  if (p.nnodes == 1) return true;  // one node: a local job
  std::optional<std::string> endpoint =
      pick(flags.endpoint, "--rdzv-endpoint", environment, "PET_RDZV_ENDPOINT", from);
  if (!endpoint) {
    const auto addr = environment.find("PET_MASTER_ADDR");
    const auto port = environment.find("PET_MASTER_PORT");
    if (addr != environment.end() && port != environment.end()) {
      endpoint = addr->second + ":" + port->second;
      from = "PET_MASTER_ADDR:PET_MASTER_PORT";
    }
  }
  if (!endpoint) {
    throw UsageError("--nnodes " + std::to_string(p.nnodes) +
                     " needs node 0's address: --rdzv-endpoint HOST:PORT (or PET_RDZV_ENDPOINT, "
                     "or PET_MASTER_ADDR and PET_MASTER_PORT)");
  }
  const auto colon = endpoint->rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw UsageError(from + " '" + *endpoint + "': expected HOST:PORT");
  }
  p.host = endpoint->substr(0, colon);
  if (p.host.size() > 2 && p.host.front() == '[' && p.host.back() == ']') {
    p.host = p.host.substr(1, p.host.size() - 2);
  }
  p.port = static_cast<std::uint16_t>(
      parse_count(from + " (port)", endpoint->substr(colon + 1), 65535, "a TCP port"));
  std::string secret_from = std::string(env::kNodesSecret);
  if (flags.secret_file) {
    secret_from = "--rdzv-secret-file '" + *flags.secret_file + "'";
    p.secret = read_user_file(*flags.secret_file, secret_from, 4096);
    while (!p.secret.empty() && (p.secret.back() == '\n' || p.secret.back() == '\r')) {
      p.secret.pop_back();
    }
    if (const auto warning = readable_by_others(*flags.secret_file)) notes.push_back(*warning);
  } else if (const auto it = environment.find(env::kNodesSecret); it != environment.end()) {
    p.secret = it->second;
  }
  if (p.secret.empty()) {
    throw UsageError("--nnodes " + std::to_string(p.nnodes) +
                     " needs the nodes' shared secret: --rdzv-secret-file FILE or "
                     "HVDRUN_RDZV_SECRET (the same on every node)");
  }
  if (p.secret.size() < kMinNodesSecret) {
    throw UsageError(secret_from + ": the nodes' secret has " + std::to_string(p.secret.size()) +
                     (p.secret.size() == 1 ? " byte" : " bytes") + ", fewer than " +
                     std::to_string(kMinNodesSecret) +
                     ": too easy to guess (make one with: head -c 32 /dev/urandom | base64)");
  }
  for (int rank = 1; rank < p.nnodes; ++rank) {
    spec.hosts.push_back({"", per_node_host_name(rank), nproc, "--nnodes"});
  }
  spec.launcher = JobSpec::Launcher::kNodes;
  return true;
}

}  // namespace hvdrun::launcher
