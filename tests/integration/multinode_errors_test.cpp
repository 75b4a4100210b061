// Launch errors on the sshd test hosts, each provoked for real, with the message checked: a
// stopped sshd, a wrong port, a wrong key, a changed host key, a missing program and a working
// directory that does not exist on the hosts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/multinode_hosts.h"
#include "tests/remote/test_hosts.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;
namespace hosts = launcher::ssh::test;

const std::vector<std::string> kTwoHosts = {"-np", "2", "-H", "hvdt-h1:1,hvdt-h2:1"};

std::vector<std::string> job(std::vector<std::string> extra, std::vector<std::string> command) {
  std::vector<std::string> args = extra;
  args.insert(args.end(), kTwoHosts.begin(), kTwoHosts.end());
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// Restarts a host's sshd however the test ends.
struct SshdStopped {
  explicit SshdStopped(int host) : host_(host) {
    EXPECT_EQ(hosts::run_script("stop " + std::to_string(host)), 0);
  }
  ~SshdStopped() { EXPECT_EQ(hosts::run_script("start " + std::to_string(host_)), 0); }
  int host_;
};

TEST(TestHostsErrors, StoppedSshdIsConnectionRefusedNamingTheHost) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  SshdStopped stopped(2);
  auto r = run_hvdrun(job({}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: cannot start the ranks of host hvdt-h2: "
                       "connection refused by SSH host hvdt-h2 (10.213.0.12:22)"))
      << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(wait_hosts_idle({1}, seconds(5)).empty()) << "host 1 started nothing";
}

// 10.213.0.99 is in the test subnet but no host has it: unreachable within --start-timeout,
// and hvdt-h1, which did connect, starts nothing.
TEST(TestHostsErrors, UnreachableHostFailsWithinTheStartTimeout) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun({"--start-timeout", "3", "-np", "2", "-H", "hvdt-h1:1,10.213.0.99:1", "true"},
                      home.env(), seconds(30));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot start the ranks of host 10.213.0.99: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "10.213.0.99 (10.213.0.99:22)")) << r.err;
  EXPECT_TRUE(contains(r.err, "unreachable") || contains(r.err, "timed out")) << r.err;
  EXPECT_LT(r.seconds, 6.0);
  EXPECT_TRUE(wait_hosts_idle({1}, seconds(5)).empty());
}

// The test hosts run sshd with OpenSSH's defaults (MaxSessions 10): 24 workers on one host
// still take one session, their node agent's, and train together.
TEST(TestHostsErrors, TwentyFourWorkersOnOneHostPastMaxSessionsTrain) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun({"-np", "24", "-H", "hvdt-h1:24", TRAIN_EXAMPLE, "--epochs", "1"},
                      home.env(), seconds(120));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:all 24 ranks agree")) << r.out << r.err;
  EXPECT_TRUE(wait_hosts_idle({1}, seconds(10)).empty());
}

TEST(TestHostsErrors, WrongPortIsConnectionRefusedNamingPort) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun(job({"-p", "2222"}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err, "connection refused by SSH host hvdt-h1 (10.213.0.11:2222)") ||
              contains(r.err, "connection refused by SSH host hvdt-h2 (10.213.0.12:2222)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "-p/--ssh-port")) << r.err;
}

TEST(TestHostsErrors, WrongKeyIsAuthenticationFailedWithWhatWasTried) {
  REQUIRE_TEST_HOSTS();
  HomeContents contents;
  contents.config = false;  // no IdentityFile of the right key
  contents.key = false;     // no default key either
  TestHome home(contents);
  const auto wrong_key = home.path() / "wrong_key";
  const auto keygen = "ssh-keygen -q -t ed25519 -N '' -f '" + wrong_key.string() + "'";
  ASSERT_EQ(std::system(keygen.c_str()), 0);
  auto r = run_hvdrun(job({"-i", wrong_key.string()}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err, "authentication as root")) << r.err;
  EXPECT_TRUE(contains(r.err, "failed; tried: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "~/wrong_key (rejected by the server)")) << r.err;
  EXPECT_TRUE(contains(r.err, "SSH_AUTH_SOCK not set")) << r.err;
}

TEST(TestHostsErrors, ChangedHostKeyIsRefused) {
  REQUIRE_TEST_HOSTS();
  TestHome home;  // knows host 1's current key
  ASSERT_EQ(hosts::run_script("rekey 1"), 0);
  for (const char* policy : {"accept-new", "yes"}) {
    auto r = run_hvdrun(job({"--ssh-host-key-check", policy}, {"true"}), home.env(), seconds(30));
    EXPECT_EQ(r.status, 255) << policy << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "host key for hvdt-h1 (10.213.0.11:22) does not match"))
        << policy << ": " << r.err;
  }
  TestHome fresh;  // knows the new key: the job runs
  auto r = run_hvdrun(job({}, {"true"}), fresh.env(), seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(TestHostsErrors, UnknownHostIsAddedWithAcceptNewAndRefusedWithYes) {
  REQUIRE_TEST_HOSTS();
  HomeContents contents;
  contents.known_hosts = false;
  TestHome home(contents);
  auto refused =
      run_hvdrun(job({"--ssh-host-key-check", "yes"}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(refused.status, 255) << refused.err;
  EXPECT_TRUE(contains(refused.err, "hvdt-h")) << refused.err;
  auto added = run_hvdrun(job({}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(added.status, 0) << added.err;
  EXPECT_TRUE(std::filesystem::exists(home.path() / ".ssh" / "known_hosts"));
  auto checked =
      run_hvdrun(job({"--ssh-host-key-check", "yes"}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(checked.status, 0) << checked.err;
}

TEST(TestHostsErrors, MissingProgramExits127NamingIt) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun(job({}, {"hvdrun-no-such-program"}), home.env(), seconds(30));
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot run 'hvdrun-no-such-program': No such file or directory"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "on hvdt-h1: exit code 127") ||
              contains(r.err, "on hvdt-h2: exit code 127"))
      << r.err;
}

// /tmp/hvdt-private is a private tmpfs on the test hosts (scripts/test-hosts.sh): a directory
// made there exists here and not on the hosts.
TEST(TestHostsErrors, MissingWorkingDirectoryNamesHostAndPath) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  const std::filesystem::path dir = "/tmp/hvdt-private/job-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto r = [&] {
    WorkingDirectory cwd(dir);
    return run_hvdrun(job({}, {"true"}), home.env(), seconds(30));
  }();
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot change to working directory '" + dir.string() + "'"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "on hvdt-h1") || contains(r.err, "on hvdt-h2")) << r.err;
}

TEST(TestHostsErrors, VerboseShowsEachPhasePerHost) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  auto r = run_hvdrun(job({"--verbose"}, {"true"}), home.env(), seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* host : {"hvdt-h1 (10.213.0.11:22) as root: connect ",
                           "hvdt-h2 (10.213.0.12:22) as root: connect "}) {
    EXPECT_TRUE(contains(r.err, host)) << r.err;
  }
  EXPECT_TRUE(contains(r.err, ", auth ")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdt-h1: started 1 worker in ")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdt-h2: started 1 worker in ")) << r.err;
  EXPECT_TRUE(contains(r.err, "rendezvous server up on 0.0.0.0:")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
