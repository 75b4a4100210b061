// The test hosts of scripts/test-hosts.sh (hvdt-h1, hvdt-h2: sshd in network namespaces) for
// the TestHosts* suites: availability, the script itself, and client options that use only the
// state dir's key and known_hosts (an empty home, no agent, no ~/.ssh/config).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/ssh/config/ssh_options.h"

namespace hvdrun::launcher::ssh::test {

// Why the test hosts cannot exist here (not root, no `ip netns`), or nullopt.
std::optional<std::string> test_hosts_unavailable();
// $HVDRUN_TEST_HOSTS_DIR, else /tmp/hvdrun-test-hosts.
std::string state_dir();
// Whether `up` has run (the state dir holds a host count).
bool test_hosts_up();
// Runs scripts/test-hosts.sh with `args`; returns its exit status.
int run_script(const std::string& args);
// Pids of the processes in network namespace hvdt<i>.
std::vector<int> namespace_pids(int host);
// Client options for the test hosts; `home` is an empty directory made for the test.
SshOptions host_options(const std::string& home);
// A fresh empty directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hvdrun::launcher::ssh::test

// Skips (visibly) where test hosts cannot exist; fails if they should exist but do not.
#define REQUIRE_TEST_HOSTS()                                                        \
  do {                                                                              \
    if (auto why = ::hvdrun::launcher::ssh::test::test_hosts_unavailable()) {       \
      GTEST_SKIP() << *why;                                                         \
    }                                                                               \
    ASSERT_TRUE(::hvdrun::launcher::ssh::test::test_hosts_up())                     \
        << "test hosts are not up: run scripts/test-hosts.sh up 2 (ctest does it)"; \
  } while (0)
