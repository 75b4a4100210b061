// The Slurm test cluster (slurm_cluster.h).
#include "tests/integration/slurm_cluster.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/proc_file.h"

namespace hvdrun::itest {

bool cluster_up() {
  return ::getuid() == 0 && std::filesystem::exists(kSlurmConf) &&
         std::system("SLURM_CONF=/tmp/hvds-slurm/slurm.conf sinfo -h >/dev/null 2>&1") == 0;
}

std::map<std::string, std::string> slurm_env() {
  return {{"SLURM_CONF", kSlurmConf}};
}

std::vector<std::string> node_leftovers(int node) {
  std::vector<std::string> out;
  FILE* pipe = ::popen(("ip netns pids hvds" + std::to_string(node) + " 2>/dev/null").c_str(), "r");
  if (!pipe) return out;
  char line[64];
  while (std::fgets(line, sizeof line, pipe)) {
    const std::string pid = std::string(line).substr(0, std::string(line).find('\n'));
    std::string name = hvdrun::test::read_proc_file("/proc/" + pid + "/comm");
    name = name.substr(0, name.find('\n'));
    if (!name.empty() && name != "slurmd") out.push_back(pid + " (" + name + ")");
  }
  ::pclose(pipe);
  return out;
}

std::vector<std::string> wait_nodes_idle(std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    std::vector<std::string> left;
    for (int node = 1; node <= 3; ++node) {
      for (auto& p : node_leftovers(node))
        left.push_back("hvds-n" + std::to_string(node) + ": " + p);
    }
    if (left.empty() || std::chrono::steady_clock::now() >= end) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += i + "; ";
  return out;
}

}  // namespace hvdrun::itest
