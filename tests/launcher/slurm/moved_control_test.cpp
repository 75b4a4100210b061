// The control connection of an hvdrun moved into its Slurm allocation: the moved hvdrun
// connects back, both prove the secret, and it raises each signal it is sent; a later run's
// link replaces one that closed; a stranger's connection, silent or without the secret, is
// closed, carries no signal and delays nobody.
#include "launcher/slurm/moved_control.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "tests/support/wait_until.h"

namespace hvdrun::launcher {
namespace {

using namespace std::chrono_literals;

std::atomic<int> usr2_seen{0};

void on_usr2(int) {
  ++usr2_seen;
}

std::map<std::string, std::string> env_of(const ControlPort& port, const std::string& secret) {
  return {{kSlurmControlPort, std::to_string(port.port())},
          {kSlurmControlSecret, secret},
          {"SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"}};
}

bool eventually(const std::function<bool()>& condition) {
  return hvdrun::test::wait_until(condition, std::chrono::seconds(3));
}

// A plain connection to the port (a stranger's).
int connect_to(const ControlPort& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

struct Usr2Handler {
  Usr2Handler() {
    struct sigaction action {};
    action.sa_handler = on_usr2;
    ::sigaction(SIGUSR2, &action, &old);
  }
  ~Usr2Handler() { ::sigaction(SIGUSR2, &old, nullptr); }
  struct sigaction old {};
};

// 100 strangers connect first and say nothing, more than the port's 16 slots for unproven
// connections: the moved hvdrun still gets through at once, and a signal sent reaches it.
TEST(MovedControl, ASignalReachesTheMovedHvdrunPastSilentStrangers) {
  const Usr2Handler handler;
  ControlPort port;
  std::vector<int> strangers;
  for (int i = 0; i < 100; ++i) strangers.push_back(connect_to(port));
  const auto start = std::chrono::steady_clock::now();
  {
    const ControlLink link(env_of(port, port.secret()));
    ASSERT_TRUE(eventually([&] { return port.connected(); }));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    const int before = usr2_seen.load();
    ASSERT_TRUE(port.send(SIGUSR2));
    EXPECT_TRUE(eventually([&] { return usr2_seen.load() == before + 1; }));
  }
  for (const int fd : strangers) ::close(fd);
}

// The moved hvdrun runs twice with --preflight (the probes, then the job), each run with its
// own link: once the first closed, nothing is sent there (it would be lost), and the second
// link gets the signals.
TEST(MovedControl, TheLinkOfALaterRunReplacesOneThatClosed) {
  const Usr2Handler handler;
  ControlPort port;
  {
    const ControlLink first(env_of(port, port.secret()));
    ASSERT_TRUE(eventually([&] { return port.connected(); }));
  }
  std::this_thread::sleep_for(100ms);  // its end has reached the port
  EXPECT_FALSE(port.send(SIGUSR2));    // a first byte there would have "gone" and been lost
  EXPECT_FALSE(port.connected());
  const ControlLink second(env_of(port, port.secret()));
  ASSERT_TRUE(eventually([&] { return port.connected(); }));
  const int before = usr2_seen.load();
  ASSERT_TRUE(port.send(SIGUSR2));
  EXPECT_TRUE(eventually([&] { return usr2_seen.load() == before + 1; }));
}

// Without the secret, the handshake fails: no connection, no signal.
TEST(MovedControl, AWrongSecretIsNoConnection) {
  ControlPort port;
  {
    const ControlLink link(env_of(port, std::string(port.secret().size(), '0')));
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_FALSE(port.connected());
  EXPECT_FALSE(port.send(SIGUSR2));
}

// An hvdrun whose environment lacks the secret (it did not move) connects to nothing.
TEST(MovedControl, WithoutTheSecretInTheEnvironmentNothingConnects) {
  ControlPort port;
  auto env = env_of(port, port.secret());
  env.erase(kSlurmControlSecret);
  {
    const ControlLink link(env);
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_FALSE(port.connected());
}

}  // namespace
}  // namespace hvdrun::launcher
