// Helpers of the multi-node tests: a home directory for hvdrun that trusts the test hosts
// (scripts/test-hosts.sh), the environment that points hvdrun at it, and checks of what runs
// in a test host's network namespace.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {

// What the home's ~/.ssh holds: config (the state dir's ssh_config: User root, IdentityFile),
// known_hosts and the default key id_ed25519, each copied from the state dir.
struct HomeContents {
  bool config = true;
  bool key = true;
  bool known_hosts = true;
};

// A temporary HOME for hvdrun, with a ~/.ssh as asked.
class TestHome {
 public:
  explicit TestHome(HomeContents contents = {});
  // HOME=<this>, no ssh-agent.
  std::map<std::string, std::string> env() const;
  const std::filesystem::path& path() const { return dir_.path; }

 private:
  TempDir dir_;
};

// Pids in network namespace hvdt<host> other than its sshd listener.
std::vector<int> host_processes(int host);
// Waits until host_processes(host) is empty for every host in `hosts`; returns the pids
// still there at the deadline, with their names ("1234 (sleep)").
std::vector<std::string> wait_hosts_idle(const std::vector<int>& hosts,
                                         std::chrono::milliseconds deadline);
// Kills the sshd session processes (not the listener) of a host: its SSH connections break.
void kill_ssh_sessions(int host);
// Changes the working directory until destruction.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::filesystem::path& dir);
  ~WorkingDirectory();

 private:
  std::filesystem::path previous_;
};

}  // namespace hvdrun::itest
