// The control connection of an hvdrun moved into its Slurm allocation: the moved hvdrun
// connects back, proves the secret, and raises each signal it is sent; a connection without
// the secret is closed and never carries a signal.
#include "launcher/job/moved_control.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace hvdrun::launcher {
namespace {

std::atomic<int> usr2_seen{0};

void on_usr2(int) {
  ++usr2_seen;
}

std::map<std::string, std::string> env_of(const ControlPort& port, const std::string& secret) {
  return {{kSlurmControlPort, std::to_string(port.port())},
          {kSlurmControlSecret, secret},
          {"SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"}};
}

// Accepts what is pending on the port within 5 s.
void accept_pending(ControlPort& port) {
  pollfd p{port.listen_fd(), POLLIN, 0};
  if (::poll(&p, 1, 5000) > 0) port.accept_one();
}

TEST(MovedControl, ASignalSentReachesTheMovedHvdrun) {
  struct sigaction action {};
  action.sa_handler = on_usr2;
  struct sigaction old {};
  ASSERT_EQ(::sigaction(SIGUSR2, &action, &old), 0);
  ControlPort port;
  {
    const ControlLink link(env_of(port, port.secret()));
    accept_pending(port);
    ASSERT_TRUE(port.connected());
    const int before = usr2_seen.load();
    ASSERT_TRUE(port.send(SIGUSR2));
    for (int i = 0; i < 200 && usr2_seen.load() == before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(usr2_seen.load(), before + 1);
  }
  ::sigaction(SIGUSR2, &old, nullptr);
}

TEST(MovedControl, AConnectionWithoutTheSecretIsClosed) {
  ControlPort port;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string wrong = std::string(port.secret().size(), '0') + "\n";
  ASSERT_EQ(::send(fd, wrong.data(), wrong.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(wrong.size()));
  accept_pending(port);
  EXPECT_FALSE(port.connected());
  EXPECT_FALSE(port.send(SIGUSR2));
  char byte = 0;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // closed by the port
  ::close(fd);
}

// An hvdrun whose environment lacks the secret (it did not move) connects to nothing.
TEST(MovedControl, WithoutTheSecretInTheEnvironmentNothingConnects) {
  ControlPort port;
  auto env = env_of(port, port.secret());
  env.erase(kSlurmControlSecret);
  const ControlLink link(env);
  pollfd p{port.listen_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 300), 0);
}

}  // namespace
}  // namespace hvdrun::launcher
