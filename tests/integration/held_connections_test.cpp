// Integration: connections that another local process holds open, without credentials, on
// hvdrun's rendezvous port and Horovod's never use up the open files hvdrun needs to start its
// workers again, and workers that must queue behind them still join.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/support/files.h"
#include "tests/support/wait_until.h"

namespace hvdrun::itest {
namespace {

using hvdrun::test::read_file;

using namespace std::chrono_literals;

UniqueFd connect_to(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ADD_FAILURE() << "connect to port " << port << ": " << std::strerror(errno);
    return {};
  }
  return fd;
}

// Generation 0: rank 1 writes the two ports to DIR/ports, waits for DIR/go and exits 3; rank 0
// waits to be stopped. Generation 1: every rank runs the program given ($1), which joins
// through the rendezvous.
void write_worker_script(const std::filesystem::path& dir) {
  std::ofstream(dir / "worker.sh")
      << "cd \"$(dirname \"$0\")\"\n"
         "if [ \"$TORCHELASTIC_RESTART_COUNT\" != 0 ]; then exec \"$1\"; fi\n"
         "if [ \"$RANK\" != 1 ]; then sleep 60; exit 4; fi\n"
         "echo \"${HVDRUN_RENDEZVOUS_ADDR##*:} $HOROVOD_GLOO_RENDEZVOUS_PORT\" >ports.tmp\n"
         "mv ports.tmp ports\n"
         "i=0\n"
         "while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done\n"
         "exit 3\n";
}

// Under a hard limit of 256 open files, 200 silent connections on each port: hvdrun admits
// 45 on each (a quarter of what its 2 workers leave; its rendezvous 2 more, for the workers
// themselves), the restart starts both workers again,
// and they join behind the connections still queued, which are shed 2 s after their accept.
TEST(HeldConnections, DoNotStopARestart) {
  TempDir dir;
  const auto out = dir.path / "out";
  const auto err = dir.path / "err";
  write_worker_script(dir.path);
  const std::string command = "ulimit -n 256 && exec timeout -s KILL 90 '" +
                              std::string(HVDRUN_BINARY) + "' -np 2 --max-restarts 1 /bin/sh '" +
                              (dir.path / "worker.sh").string() + "' '" + INIT_WORKER + "' >'" +
                              out.string() + "' 2>'" + err.string() + "'";
  int rc = -1;
  std::thread job([&] { rc = std::system(command.c_str()); });
  const auto ports_file = dir.path / "ports";
  for (int i = 0; i < 600 && !std::filesystem::exists(ports_file); ++i) {
    std::this_thread::sleep_for(50ms);
  }
  int rendezvous_port = 0;
  int horovod_port = 0;
  std::ifstream(ports_file) >> rendezvous_port >> horovod_port;
  std::vector<UniqueFd> held;
  if (rendezvous_port > 0 && horovod_port > 0) {
    for (int i = 0; i < 200; ++i) {
      held.push_back(connect_to(rendezvous_port));
      held.push_back(connect_to(horovod_port));
    }
    // hvdrun accepts what it admits, and says where it stopped.
    EXPECT_TRUE(test::wait_until(
        [&] {
          const std::string text = read_file(err);
          return contains(text, "connections have not authenticated, the most that may wait") &&
                 contains(text, "the limit max_connections=45");
        },
        60s))
        << read_file(err);
  } else {
    ADD_FAILURE() << "no ports from rank 1";
  }
  std::ofstream(dir.path / "go").close();
  job.join();
  const std::string text = read_file(err);
  ASSERT_TRUE(WIFEXITED(rc)) << text;
  EXPECT_EQ(WEXITSTATUS(rc), 0) << text;
  const std::string output = read_file(out);
  EXPECT_TRUE(contains(output, "[0]<stdout>:rank 0 of 2 initialised")) << output;
  EXPECT_TRUE(contains(output, "[1]<stdout>:rank 1 of 2 initialised")) << output;
  EXPECT_TRUE(contains(text, "47 connections have not authenticated, the most that may wait"))
      << text;
  EXPECT_TRUE(contains(text, "45 connections open, the limit max_connections=45")) << text;
  EXPECT_TRUE(contains(text, "restarting every rank (restart 1 of 1)")) << text;
}

}  // namespace
}  // namespace hvdrun::itest
