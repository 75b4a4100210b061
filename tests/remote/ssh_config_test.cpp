// ~/.ssh/config lookup, target resolution and the remote environment's deny list.
#include "launcher/ssh/config/ssh_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "hvdrun/error.h"
#include "launcher/remote/remote_spawn.h"

namespace hvdrun::launcher::ssh {
namespace {

constexpr const char* kConfig = R"(# global first
User globaluser

Host node* !node9
  HostName %h.cluster.example
  Port 2222
  IdentityFile ~/.ssh/cluster_key

Host node1 other
  Port 3333
  User = special
  IdentityFile "/keys/second key"

Match host node1
  User matched

Host *
  Port 22
  IdentityFile ~/.ssh/id_default
)";

TEST(SshConfig, FirstValueWinsAndIdentityFilesAccumulate) {
  const auto entry = lookup_ssh_config(kConfig, "node1", "/home/u", "cfg");
  EXPECT_EQ(entry.host_name, "node1.cluster.example");
  EXPECT_EQ(entry.port, 2222);
  EXPECT_EQ(entry.user, "globaluser");
  EXPECT_EQ(entry.identity_files,
            (std::vector<std::string>{"/home/u/.ssh/cluster_key", "/keys/second key",
                                      "/home/u/.ssh/id_default"}));
}

TEST(SshConfig, NegatedPatternExcludesTheBlock) {
  const auto entry = lookup_ssh_config(kConfig, "node9", "/home/u", "cfg");
  EXPECT_EQ(entry.host_name, std::nullopt);
  EXPECT_EQ(entry.port, 22);
}

TEST(SshConfig, MatchBlocksAreNotApplied) {
  const auto entry = lookup_ssh_config("Match all\n  User m\nHost x\n  User x\n", "x", "/h", "c");
  EXPECT_EQ(entry.user, "x");
}

TEST(SshConfig, PatternsAreCaseInsensitiveGlobs) {
  EXPECT_TRUE(ssh_host_matches("Node?", "node1"));
  EXPECT_FALSE(ssh_host_matches("node?", "node10"));
  EXPECT_TRUE(ssh_host_matches("a b *.example", "host.example"));
  EXPECT_FALSE(ssh_host_matches("* !host.example", "host.example"));
}

TEST(SshConfig, BadPortNamesFileAndLine) {
  try {
    lookup_ssh_config("Host a\n  Port 99999\n", "a", "/h", "~/.ssh/config");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "~/.ssh/config:2: bad Port '99999' (expected 1..65535)");
  }
}

TEST(SshConfig, ResolveTargetPrecedence) {
  char dir[] = "/tmp/hvdrun-ssh-config-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/config";
  std::ofstream(path) << "Host n1\n  HostName 10.1.2.3\n  Port 2200\n  User cfguser\n";
  SshOptions options;
  options.home_dir = dir;
  options.local_user = "me";
  options.config_file = path;
  auto target = resolve_target("", "n1", options);
  EXPECT_EQ(target.host_name, "10.1.2.3");
  EXPECT_EQ(target.port, 2200);
  EXPECT_EQ(target.user, "cfguser");
  options.port = 2;
  options.identity_file = "/k";
  target = resolve_target("explicit", "n1", options);  // -p and user@host win over the config
  EXPECT_EQ(target.port, 2);
  EXPECT_EQ(target.user, "explicit");
  EXPECT_EQ(target.identity_files, std::vector<std::string>{"/k"});
  target = resolve_target("", "other", options);
  EXPECT_EQ(target.host_name, "other");
  EXPECT_EQ(target.user, "me");
  std::remove(path.c_str());
  ::rmdir(dir);
}

TEST(RemoteEnvironment, DropsLauncherOnlyVariablesUnlessForwarded) {
  const std::vector<std::string> env = {"PATH=/bin",
                                        "SSH_AUTH_SOCK=/tmp/a",
                                        "SSH_CONNECTION=x",
                                        "PWD=/w",
                                        "OLDPWD=/o",
                                        "HOSTNAME=launcher",
                                        "BASH_FUNC_f%%=() {}",
                                        "DISPLAY=:0",
                                        "SHLVL=2",
                                        "_=/usr/bin/hvdrun",
                                        "HOME=/home/me",
                                        "TERM=xterm",
                                        "HVDRUN_SECRET=s",
                                        "CUDA_VISIBLE_DEVICES=0",
                                        "SINGULARITYENV_CUDA_VISIBLE_DEVICES=1",
                                        "_HOROVOD_SECRET_KEY=k",
                                        "RANK=3"};
  const auto out = remote::remote_worker_environment(env, {"DISPLAY"});
  EXPECT_EQ(out, (std::vector<std::string>{"PATH=/bin", "DISPLAY=:0", "TERM=xterm",
                                           "HVDRUN_SECRET=s", "RANK=3"}));
  // Named with -x, it is forwarded.
  EXPECT_EQ(remote::remote_worker_environment({"CUDA_VISIBLE_DEVICES=0"}, {"CUDA_VISIBLE_DEVICES"}),
            (std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0"}));
}

TEST(RemoteEnvironment, AgentCommandQuotesThePath) {
  EXPECT_EQ(remote::remote_agent_command("/opt/hvdrun/bin/hvdrun"),
            "'/opt/hvdrun/bin/hvdrun' --node-agent");
  EXPECT_EQ(remote::remote_agent_command("/a b/it's"), "'/a b/it'\\''s' --node-agent");
}

}  // namespace
}  // namespace hvdrun::launcher::ssh
