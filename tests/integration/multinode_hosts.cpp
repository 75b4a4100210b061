// Multi-node test helpers (multinode_hosts.h).
#include "tests/integration/multinode_hosts.h"

#include <signal.h>

#include <fstream>
#include <thread>

#include "tests/remote/test_hosts.h"
#include "tests/support/proc_file.h"

namespace hvdrun::itest {
namespace {

namespace fs = std::filesystem;
namespace hosts = launcher::ssh::test;

std::string read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int listener_pid(int host) {
  const auto text =
      read_line(fs::path(hosts::state_dir()) / ("h" + std::to_string(host)) / "sshd.pid");
  return text.empty() ? -1 : std::stoi(text);
}

std::string process_name(int pid) {
  const std::string comm = test::read_proc_file("/proc/" + std::to_string(pid) + "/comm");
  return comm.substr(0, comm.find('\n'));
}

}  // namespace

TestHome::TestHome(HomeContents contents) {
  const fs::path state = hosts::state_dir();
  const fs::path ssh = dir_.path / ".ssh";
  fs::create_directories(ssh);
  fs::permissions(ssh, fs::perms::owner_all);
  if (contents.config) fs::copy_file(state / "ssh_config", ssh / "config");
  if (contents.known_hosts) fs::copy_file(state / "known_hosts", ssh / "known_hosts");
  if (contents.key) {
    fs::copy_file(state / "id_ed25519", ssh / "id_ed25519");
    fs::permissions(ssh / "id_ed25519", fs::perms::owner_read | fs::perms::owner_write);
  }
}

std::map<std::string, std::string> TestHome::env() const {
  return {{"HOME", dir_.path.string()}, {"SSH_AUTH_SOCK", ""}};
}

std::vector<int> host_processes(int host) {
  std::vector<int> out;
  const int listener = listener_pid(host);
  for (const int pid : hosts::namespace_pids(host)) {
    if (pid != listener && ::kill(pid, 0) == 0 && !process_name(pid).empty()) out.push_back(pid);
  }
  return out;
}

std::vector<std::string> wait_hosts_idle(const std::vector<int>& host_list,
                                         std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    std::vector<std::string> left;
    for (const int host : host_list) {
      for (const int pid : host_processes(host)) {
        left.push_back(std::to_string(pid) + " (" + process_name(pid) + ") on host " +
                       std::to_string(host));
      }
    }
    if (left.empty() || std::chrono::steady_clock::now() >= end) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void kill_ssh_sessions(int host) {
  for (const int pid : host_processes(host)) {
    if (process_name(pid).starts_with("sshd")) ::kill(pid, SIGKILL);
  }
}

WorkingDirectory::WorkingDirectory(const fs::path& dir) : previous_(fs::current_path()) {
  fs::current_path(dir);
}

WorkingDirectory::~WorkingDirectory() {
  std::error_code ignored;
  fs::current_path(previous_, ignored);
}

}  // namespace hvdrun::itest
