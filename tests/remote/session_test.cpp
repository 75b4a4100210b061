// SshSession against the real test hosts: connect and run a command, and each connect error
// provoked for real (stopped sshd, wrong port, wrong key, changed host key, unknown host key,
// no answer), each checked for its kind and message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/ssh/ssh_error.h"
#include "launcher/ssh/ssh_session.h"
#include "tests/remote/test_hosts.h"
#include "tests/support/files.h"

namespace hvdrun::launcher::ssh {
namespace {

using hvdrun::test::read_file;

using namespace std::chrono_literals;
using test::host_options;
using test::run_script;
using test::state_dir;
using test::TempDir;

SshSession connect_to(const std::string& host, const SshOptions& options,
                      Clock::duration limit = 10s) {
  return SshSession::connect(resolve_target("", host, options), options, Clock::now() + limit);
}

// The SshError of a connect that must fail.
SshError connect_error(const std::string& host, const SshOptions& options,
                       Clock::duration limit = 10s) {
  try {
    connect_to(host, options, limit);
  } catch (const SshError& e) {
    return e;
  }
  ADD_FAILURE() << "connecting to " << host << " succeeded";
  return SshError(SshFailure::kCancelled, "");
}

TEST(TestHostsSession, ConnectsAndRunsHostname) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  SshSession session = connect_to("hvdt-h1", host_options(home.path()));
  EXPECT_EQ(session.where(), "hvdt-h1 (10.213.0.11:22)");
  EXPECT_EQ(session.local_addr(), "10.213.0.1");
  ASSERT_EQ(session.phases().size(), 4u);
  const ExecResult result =
      exec_command(session, "hostname; cat", "from stdin", Clock::now() + 10s);
  EXPECT_EQ(result.out, "hvdt-h1\nfrom stdin");
  EXPECT_EQ(result.exit_code, 0);
  const ExecResult failed = exec_command(session, "echo e >&2; exit 5", "", Clock::now() + 10s);
  EXPECT_EQ(failed.err, "e\n");
  EXPECT_EQ(failed.exit_code, 5);
  const ExecResult killed = exec_command(session, "kill -TERM $$", "", Clock::now() + 10s);
  EXPECT_EQ(killed.exit_signal, "TERM");
}

TEST(TestHostsSession, StoppedSshdIsConnectionRefused) {
  REQUIRE_TEST_HOSTS();
  ASSERT_EQ(run_script("stop 1"), 0);
  TempDir home;
  const SshError error = connect_error("hvdt-h1", host_options(home.path()));
  ASSERT_EQ(run_script("start 1"), 0);
  EXPECT_EQ(error.failure(), SshFailure::kRefused);
  EXPECT_NE(std::string(error.what())
                .find("connection refused by SSH host hvdt-h1 (10.213.0.11:22): no sshd listens "
                      "on port 22"),
            std::string::npos)
      << error.what();
  connect_to("hvdt-h1", host_options(home.path()));  // back again
}

TEST(TestHostsSession, WrongPortIsConnectionRefusedNamingThePort) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  SshOptions options = host_options(home.path());
  options.port = 2;
  const SshError error = connect_error("hvdt-h2", options);
  EXPECT_EQ(error.failure(), SshFailure::kRefused);
  EXPECT_NE(std::string(error.what()).find("hvdt-h2 (10.213.0.12:2): no sshd listens on port 2"),
            std::string::npos)
      << error.what();
}

TEST(TestHostsSession, WrongKeyListsWhatWasTried) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  const std::string key = home.path() + "/wrong_key";
  ASSERT_EQ(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + key).c_str()), 0);
  SshOptions options = host_options(home.path());
  options.identity_file = key;
  const SshError error = connect_error("hvdt-h1", options);
  EXPECT_EQ(error.failure(), SshFailure::kAuth);
  EXPECT_EQ(std::string(error.what()),
            "authentication as root@hvdt-h1 (10.213.0.11:22) failed; tried: ssh-agent "
            "(SSH_AUTH_SOCK not set); ~/wrong_key (rejected by the server); ~/.ssh/id_ed25519 "
            "(not present); ~/.ssh/id_ecdsa (not present); ~/.ssh/id_rsa (not present). Add "
            "your public key to ~root/.ssh/authorized_keys on that host (ssh-copy-id), load a "
            "key into ssh-agent, or pass -i/--ssh-identity-file");
}

TEST(TestHostsSession, ChangedHostKeyIsAMismatchNamingFileAndLine) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  const std::string stale = home.path() + "/known_hosts";
  std::filesystem::copy_file(state_dir() + "/known_hosts", stale);
  ASSERT_EQ(run_script("rekey 2"), 0);
  SshOptions options = host_options(home.path());
  options.known_hosts_file = stale;
  const SshError error = connect_error("hvdt-h2", options);
  EXPECT_EQ(error.failure(), SshFailure::kHostKey);
  const std::string message = error.what();
  EXPECT_TRUE(
      message.starts_with("host key for hvdt-h2 (10.213.0.12:22) does not match "
                          "~/known_hosts:2; the server offers ED25519 key SHA256:"))
      << message;
  EXPECT_NE(message.find("ssh-keygen -R 'hvdt-h2' -f ~/known_hosts"), std::string::npos);
  options.host_key_policy = HostKeyPolicy::kAcceptNew;  // accept-new does not accept changes
  EXPECT_EQ(connect_error("hvdt-h2", options).failure(), SshFailure::kHostKey);
  connect_to("hvdt-h2", host_options(home.path()));  // the updated known_hosts matches
}

TEST(TestHostsSession, UnknownHostRefusedWithYesAndRecordedWithAcceptNew) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  SshOptions options = host_options(home.path());
  options.known_hosts_file = home.path() + "/.ssh/known_hosts";
  const SshError error = connect_error("hvdt-h1", options);
  EXPECT_EQ(error.failure(), SshFailure::kHostKey);
  EXPECT_NE(std::string(error.what()).find("is not in ~/.ssh/known_hosts"), std::string::npos)
      << error.what();
  options.host_key_policy = HostKeyPolicy::kAcceptNew;
  const SshSession first = connect_to("hvdt-h1", options);
  EXPECT_NE(first.host_key_note().find("added ED25519 key"), std::string::npos);
  EXPECT_TRUE(read_file(options.known_hosts_file).starts_with("hvdt-h1 ssh-ed25519 "));
  options.host_key_policy = HostKeyPolicy::kYes;
  const SshSession second = connect_to("hvdt-h1", options);
  EXPECT_EQ(second.host_key_note(), "");
}

TEST(TestHostsSession, SilentAddressTimesOutWithinTheDeadline) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  const auto start = Clock::now();
  const SshError error = connect_error("10.213.0.99", host_options(home.path()), 300ms);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_TRUE(error.failure() == SshFailure::kTimeout ||
              error.failure() == SshFailure::kUnreachable)
      << error.what();
  EXPECT_NE(std::string(error.what()).find("10.213.0.99"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace hvdrun::launcher::ssh
