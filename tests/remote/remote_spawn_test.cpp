// RemoteSpawner against the real test hosts: workers on two hosts with their environment
// shipped, exit codes and signals, a missing directory or program, terminate, teardown on
// destruction, host failures and a lost connection.
#include "launcher/remote/remote_spawn.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/unique_fd.h"
#include "launcher/agent/agent_protocol.h"
#include "tests/remote/agent_process.h"
#include "tests/remote/test_hosts.h"

namespace hvdrun::launcher::remote {
namespace {

using namespace std::chrono_literals;
using ssh::test::TempDir;
using Clock = std::chrono::steady_clock;

// Records the spawner's events (they arrive on host threads).
class Recorder {
 public:
  RemoteEvents events() {
    RemoteEvents e;
    e.on_host_ready = [this](HostReady ready) { with_lock([&] { ready_[ready.host] = ready; }); };
    e.on_host_failed = [this](HostFailed f) { with_lock([&] { failed_[f.host] = f; }); };
    e.on_started = [this](int rank) { with_lock([&] { started_[rank] = true; }); };
    e.on_output = [this](int rank, StreamKind stream, std::string bytes) {
      with_lock([&] { (stream == StreamKind::kStdout ? out_ : err_)[rank] += bytes; });
    };
    // A worker's entry in exits_ appears once its output is complete too.
    e.on_exit = [this](int rank, ProcessEnd exit, bool output_open) {
      with_lock([&] { (output_open ? early_ : exits_).emplace(rank, exit); });
    };
    e.on_output_closed = [this](int rank) {
      with_lock([&] {
        const auto it = early_.find(rank);
        if (it == early_.end()) return;
        exits_.emplace(rank, it->second);
        ended_early_.insert(rank);
      });
    };
    return e;
  }

  template <typename Predicate>
  bool wait(Predicate predicate, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return predicate(*this); });
  }
  bool wait_ready(std::size_t hosts) {
    return wait([&](Recorder& r) { return r.ready_.size() + r.failed_.size() == hosts; });
  }
  bool wait_exits(std::size_t count) {
    return wait([&](Recorder& r) { return r.exits_.size() == count; });
  }

  // Held to read the members below outside a wait.
  std::mutex& mutex() { return mutex_; }

  // Read after a successful wait (events for those entries are complete).
  std::map<std::size_t, HostReady> ready_;
  std::map<std::size_t, HostFailed> failed_;
  std::map<int, bool> started_;
  std::map<int, std::string> out_, err_;
  std::map<int, ProcessEnd> exits_;
  std::map<int, ProcessEnd> early_;  // ended with output still coming
  std::set<int> ended_early_;        // ... and whose output closed later

 private:
  template <typename F>
  void with_lock(F f) {
    {
      std::lock_guard lock(mutex_);
      f();
    }
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
};

// SIGKILLs everything in test host `host` but its listening sshd: the sessions' sshd
// processes, the agents, the workers.
void kill_host_sessions(int host) {
  std::ifstream pid_file(ssh::test::state_dir() + "/h" + std::to_string(host) + "/sshd.pid");
  int listener = 0;
  pid_file >> listener;
  for (const int pid : ssh::test::namespace_pids(host)) {
    if (pid != listener) ::kill(pid, SIGKILL);
  }
}

RemoteSpawnOptions spawn_options(const std::string& home) {
  RemoteSpawnOptions options;
  options.ssh = ssh::test::host_options(home);
  options.agent_path = TEST_AGENT;
  options.start_timeout = 10s;
  return options;
}

RemoteWorker shell_worker(int rank, const std::string& script, std::vector<std::string> env = {},
                          const std::string& cwd = "/tmp") {
  env.push_back("PATH=/usr/bin:/bin");
  return {rank, "rank " + std::to_string(rank), {"/bin/sh", "-c", script}, std::move(env), cwd};
}

TEST(TestHostsSpawn, WorkersOnTwoHostsGetTheirEnvironmentAndExitCodes) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  const auto start = Clock::now();
  RemoteSpawner spawner({{"", "hvdt-h1"}, {"root", "hvdt-h2"}}, spawn_options(home.path()),
                        recorder.events());
  ASSERT_TRUE(recorder.wait_ready(2));
  const auto connected = Clock::now() - start;
  ASSERT_EQ(recorder.failed_.size(), 0u) << recorder.failed_.begin()->second.message;
  EXPECT_EQ(recorder.ready_[0].local_addr, "10.213.0.1");
  EXPECT_EQ(recorder.ready_[1].where, "hvdt-h2 (10.213.0.12:22)");
  const std::string script = "echo \"$X $(hostname) $(pwd)\"; exit $CODE";
  for (std::size_t host = 0; host < 2; ++host) {
    std::vector<RemoteWorker> workers;
    for (int local = 0; local < 2; ++local) {
      const int rank = static_cast<int>(host) * 2 + local;
      workers.push_back(
          shell_worker(rank, script,
                       {"X=shipped-" + std::to_string(rank), "CODE=" + std::to_string(rank + 10)}));
    }
    spawner.start_workers(host, std::move(workers));
  }
  ASSERT_TRUE(recorder.wait_exits(4));
  std::printf("[timing] 2 hosts connected in %.1f ms, 4 workers done in %.1f ms\n",
              std::chrono::duration<double, std::milli>(connected).count(),
              std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  for (int rank = 0; rank < 4; ++rank) {
    const std::string host = rank < 2 ? "hvdt-h1" : "hvdt-h2";
    EXPECT_TRUE(recorder.started_[rank]);
    EXPECT_EQ(recorder.out_[rank], "shipped-" + std::to_string(rank) + " " + host + " /tmp\n");
    const ProcessEnd& exit = recorder.exits_.at(rank);
    EXPECT_EQ(exit.kind, ProcessEnd::Kind::kExited) << exit.describe();
    EXPECT_EQ(exit.value, rank + 10);
  }
}

TEST(TestHostsSpawn, MissingDirectoryAndProgramAreReported) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  RemoteSpawner spawner({{"", "hvdt-h1"}}, spawn_options(home.path()), recorder.events());
  ASSERT_TRUE(recorder.wait_ready(1));
  spawner.start_workers(0, {shell_worker(0, "true", {}, "/nonexistent/hvdrun-cwd"),
                            {1, "rank 1", {"hvdrun-no-such-program"}, {"PATH=/bin"}, "/"}});
  ASSERT_TRUE(recorder.wait_exits(2));
  EXPECT_EQ(recorder.exits_.at(0).shell_code(), 2);
  EXPECT_EQ(recorder.err_[0],
            "hvdrun node agent on hvdt-h1: cannot change to working directory "
            "'/nonexistent/hvdrun-cwd': No such file or directory\n");
  EXPECT_EQ(recorder.exits_.at(1).shell_code(), 127);
  EXPECT_EQ(recorder.err_[1], "cannot run 'hvdrun-no-such-program': No such file or directory\n");
}

// 800 KiB of environment: far more than fits one command line string (the kernel's 128 KiB
// MAX_ARG_STRLEN, which `ssh host 'env A=... cmd'` hits), within what execve accepts.
TEST(TestHostsSpawn, LargeEnvironmentReachesTheWorker) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  RemoteSpawner spawner({{"", "hvdt-h2"}}, spawn_options(home.path()), recorder.events());
  ASSERT_TRUE(recorder.wait_ready(1));
  std::vector<std::string> env;
  for (int i = 0; i < 8; ++i)
    env.push_back("BIG" + std::to_string(i) + "=" + std::string(100'000, 'v'));
  for (int i = 0; i < 2000; ++i)
    env.push_back("MANY_" + std::to_string(i) + "=" + std::to_string(i));
  spawner.start_workers(0, {shell_worker(0, "echo ${#BIG7} $MANY_1999", std::move(env))});
  ASSERT_TRUE(recorder.wait_exits(1));
  EXPECT_EQ(recorder.err_[0], "");
  EXPECT_EQ(recorder.out_[0], "100000 1999\n");
  EXPECT_TRUE(recorder.exits_.at(0).success()) << recorder.exits_.at(0).describe();
}

TEST(TestHostsSpawn, TerminateSignalsOneRank) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  RemoteSpawner spawner({{"", "hvdt-h1"}, {"", "hvdt-h2"}}, spawn_options(home.path()),
                        recorder.events());
  ASSERT_TRUE(recorder.wait_ready(2));
  spawner.start_workers(0, {shell_worker(0, "echo up; exec sleep 30")});
  spawner.start_workers(1, {shell_worker(1, "echo up; exec sleep 30")});
  ASSERT_TRUE(
      recorder.wait([](Recorder& r) { return r.out_[0] == "up\n" && r.out_[1] == "up\n"; }));
  spawner.terminate(1, SIGTERM);
  ASSERT_TRUE(recorder.wait_exits(1));
  EXPECT_EQ(recorder.exits_.at(1).kind, ProcessEnd::Kind::kSignaled);
  EXPECT_EQ(recorder.exits_.at(1).value, SIGTERM);
  spawner.terminate_all(SIGKILL);
  ASSERT_TRUE(recorder.wait_exits(2));
  EXPECT_EQ(recorder.exits_.at(0).describe(), "killed by signal SIGKILL (9)");
}

TEST(TestHostsSpawn, DestructionKillsRemoteWorkers) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  int pid = 0;
  {
    RemoteSpawner spawner({{"", "hvdt-h2"}}, spawn_options(home.path()), recorder.events());
    ASSERT_TRUE(recorder.wait_ready(1));
    spawner.start_workers(0, {shell_worker(0, "trap '' TERM; echo $$; while :; do sleep 1; done")});
    ASSERT_TRUE(
        recorder.wait([](Recorder& r) { return r.out_[0].find('\n') != std::string::npos; }));
    pid = std::stoi(recorder.out_[0]);
    ASSERT_FALSE(ssh::test::process_gone(pid));
  }
  EXPECT_TRUE(ssh::test::wait_gone(pid, 5s)) << "remote worker " << pid << " survived";
  EXPECT_EQ(recorder.exits_.size(), 0u);  // no events once destruction began
}

TEST(TestHostsSpawn, UnreachableHostFailsAndItsWorkersFailToStart) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  RemoteSpawnOptions options = spawn_options(home.path());
  options.ssh.port = 2;
  RemoteSpawner spawner({{"", "hvdt-h1"}}, options, recorder.events());
  ASSERT_TRUE(recorder.wait_ready(1));
  ASSERT_EQ(recorder.failed_.count(0), 1u);
  EXPECT_EQ(recorder.failed_[0].failure, ssh::SshFailure::kRefused);
  spawner.start_workers(0, {shell_worker(5, "true")});
  ASSERT_TRUE(recorder.wait_exits(1));
  EXPECT_EQ(recorder.exits_.at(5).kind, ProcessEnd::Kind::kFailedToStart);
  EXPECT_NE(recorder.exits_.at(5).message.find("connection refused by SSH host hvdt-h1"),
            std::string::npos);
}

// A TCP listener on the bridge address that accepts (in the kernel's backlog) and never speaks
// SSH: a connect to it hangs in the SSH handshake.
class MuteServer {
 public:
  MuteServer() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, "10.213.0.1", &addr.sin_addr);
    socklen_t len = sizeof addr;
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(fd_.get(), 16) != 0 ||
        ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot listen on 10.213.0.1");
    }
    port_ = ntohs(addr.sin_port);
  }
  int port() const { return port_; }

 private:
  UniqueFd fd_;
  int port_ = 0;
};

TEST(TestHostsSpawn, HandshakeTimeoutIsReported) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  MuteServer mute;
  Recorder recorder;
  RemoteSpawnOptions options = spawn_options(home.path());
  options.ssh.port = mute.port();
  options.start_timeout = 300ms;
  const auto start = Clock::now();
  RemoteSpawner spawner({{"", "10.213.0.1"}}, options, recorder.events());
  ASSERT_TRUE(recorder.wait_ready(1));
  EXPECT_LT(Clock::now() - start, 2s);
  ASSERT_EQ(recorder.failed_.count(0), 1u);
  EXPECT_EQ(recorder.failed_[0].failure, ssh::SshFailure::kTimeout) << recorder.failed_[0].message;
  EXPECT_NE(recorder.failed_[0].message.find(
                "SSH handshake with 10.213.0.1 (10.213.0.1:" + std::to_string(mute.port()) + ")"),
            std::string::npos)
      << recorder.failed_[0].message;
}

TEST(TestHostsSpawn, DestructionDuringHandshakeIsPrompt) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  MuteServer mute;
  Recorder recorder;
  RemoteSpawnOptions options = spawn_options(home.path());
  options.ssh.port = mute.port();
  const auto start = Clock::now();
  {
    RemoteSpawner spawner({{"", "10.213.0.1"}}, options, recorder.events());
    std::this_thread::sleep_for(200ms);  // in the handshake, which would wait 10 s
  }
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(recorder.failed_.size(), 0u);  // cancelled silently
}

TEST(TestHostsSpawn, LostConnectionIsReportedPerRank) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  RemoteSpawner spawner({{"", "hvdt-h2"}}, spawn_options(home.path()), recorder.events());
  ASSERT_TRUE(recorder.wait_ready(1));
  spawner.start_workers(0, {shell_worker(3, "echo up; exec sleep 30")});
  ASSERT_TRUE(recorder.wait([](Recorder& r) { return r.out_[3] == "up\n"; }));
  kill_host_sessions(2);
  ASSERT_TRUE(recorder.wait_exits(1));
  const ProcessEnd& exit = recorder.exits_.at(3);
  EXPECT_EQ(exit.kind, ProcessEnd::Kind::kLostConnection) << exit.describe();
  EXPECT_TRUE(exit.message.starts_with("lost connection to host hvdt-h2 (10.213.0.12:22)"))
      << exit.message;
}

// One test host's spawner whose console is paused until `paused` is cleared.
struct PausedHost {
  explicit PausedHost(const std::string& host)
      : spawner({{"", host}}, options(), recorder.events()) {}
  RemoteSpawnOptions options() {
    RemoteSpawnOptions o = spawn_options(home.path());
    o.output_paused = [this] { return paused.load(); };
    return o;
  }
  TempDir home;
  Recorder recorder;
  std::atomic<bool> paused{true};
  RemoteSpawner spawner;  // last: its events use the members above
};

// While output is paused (the console is blocked), the launcher takes at most the agent's
// credit: a worker writing more waits on its host (back-pressure); once output flows again,
// every byte arrives, then its end.
TEST(TestHostsSpawn, OutputBeyondTheCreditWaitsOnTheHostWhilePaused) {
  REQUIRE_TEST_HOSTS();
  PausedHost host("hvdt-h1");
  Recorder& recorder = host.recorder;
  ASSERT_TRUE(recorder.wait_ready(1));
  host.spawner.start_workers(0,
                             {shell_worker(0, "head -c 3000000 /dev/zero | tr '\\0' x; exit 5")});
  EXPECT_FALSE(
      recorder.wait([](Recorder& r) { return r.exits_.contains(0) || r.early_.contains(0); }, 2s));
  {
    std::lock_guard lock(recorder.mutex());
    EXPECT_LE(recorder.out_[0].size(), agent::kInitialCredit);
  }
  host.paused = false;
  ASSERT_TRUE(recorder.wait_exits(1));
  EXPECT_EQ(recorder.out_[0], std::string(3000000, 'x'));
  EXPECT_EQ(recorder.exits_.at(0).describe(), "exit code 5");
}

// A worker that fails while output is paused, having written less than the credit: its end is
// reported while paused (the job learns of a failure with its console blocked), its output is
// complete.
TEST(TestHostsSpawn, AFailureWhileOutputIsPausedIsReported) {
  REQUIRE_TEST_HOSTS();
  PausedHost host("hvdt-h1");
  Recorder& recorder = host.recorder;
  ASSERT_TRUE(recorder.wait_ready(1));
  host.spawner.start_workers(0, {shell_worker(0, "head -c 200000 /dev/zero | tr '\\0' x; exit 5")});
  ASSERT_TRUE(recorder.wait([](Recorder& r) { return r.exits_.contains(0); }))
      << "the end waited for the console";
  std::lock_guard lock(recorder.mutex());
  EXPECT_EQ(recorder.out_[0], std::string(200000, 'x'));
  EXPECT_EQ(recorder.exits_.at(0).describe(), "exit code 5");
}

// The connection breaks while output is paused, after a worker's early end and before its
// output was taken: the break is noticed at once (the paused session is still read), and the
// worker's end stays the one its agent reported, not "lost connection". The worker writes the
// agent's whole credit and 35,712 bytes more, which wait in its pipe when it exits: its end
// goes out at once, with output still to come.
TEST(TestHostsSpawn, AnEarlyEndSurvivesALostConnection) {
  REQUIRE_TEST_HOSTS();
  TempDir home;
  Recorder recorder;
  RemoteSpawnOptions options = spawn_options(home.path());
  options.output_paused = [] { return true; };
  RemoteSpawner spawner({{"", "hvdt-h2"}}, std::move(options), recorder.events());
  ASSERT_TRUE(recorder.wait_ready(1));
  spawner.start_workers(0, {shell_worker(3, "head -c 560000 /dev/zero | tr '\\0' x; exit 6")});
  ASSERT_TRUE(recorder.wait([](Recorder& r) { return r.early_.contains(3); }));
  kill_host_sessions(2);
  ASSERT_TRUE(recorder.wait_exits(1));
  EXPECT_EQ(recorder.exits_.at(3).describe(), "exit code 6");
  EXPECT_TRUE(recorder.ended_early_.contains(3));
}

}  // namespace
}  // namespace hvdrun::launcher::remote
