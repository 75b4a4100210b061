// Test-host helpers (test_hosts.h).
#include "tests/remote/test_hosts.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace hvdrun::launcher::ssh::test {

std::optional<std::string> test_hosts_unavailable() {
  if (::geteuid() != 0) return "test hosts need root (network namespaces, sshd)";
  if (std::system("ip netns list >/dev/null 2>&1") != 0) return "'ip netns' is not available";
  return std::nullopt;
}

std::string state_dir() {
  const char* dir = std::getenv("HVDRUN_TEST_HOSTS_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp/hvdrun-test-hosts";
}

bool test_hosts_up() {
  return std::filesystem::exists(state_dir() + "/count");
}

int run_script(const std::string& args) {
  const std::string command = std::string(TEST_HOSTS_SCRIPT) + " " + args;
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<int> namespace_pids(int host) {
  std::vector<int> pids;
  const std::string command = "ip netns pids hvdt" + std::to_string(host) + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return pids;
  int pid = 0;
  while (std::fscanf(pipe, "%d", &pid) == 1) pids.push_back(pid);
  ::pclose(pipe);
  return pids;
}

SshOptions host_options(const std::string& home) {
  SshOptions options;
  options.home_dir = home;
  options.local_user = "root";
  options.identity_file = state_dir() + "/id_ed25519";
  options.known_hosts_file = state_dir() + "/known_hosts";
  options.global_known_hosts_file = "";
  options.config_file = "none";
  options.host_key_policy = HostKeyPolicy::kYes;
  return options;
}

TempDir::TempDir() {
  char dir[] = "/tmp/hvdrun-ssh-test-XXXXXX";
  if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = dir;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace hvdrun::launcher::ssh::test
