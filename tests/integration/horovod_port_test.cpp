// Integration: Horovod's rendezvous takes no credentials, so hvdrun serves it only to processes
// of its own user on this machine (and to the job's hosts). Another user's PUT, the request
// that used to make hvdrun decide "the job runs Horovod" and re-form it at will, is closed
// unanswered and logged; the job's own worker is served.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using namespace std::chrono_literals;

// In a child of uid 65534: PUT /global/stranger to 127.0.0.1:port; exits 0 when the server
// closed the connection without an HTTP answer, 1 when it answered, 2-4 on setup errors.
int put_as_another_user(int port) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::_exit(3);
    }
    const std::string request =
        "PUT /global/stranger HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx";
    (void)::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
    char reply[64];
    const ssize_t got = ::recv(fd.get(), reply, sizeof reply, 0);
    ::_exit(got > 0 ? 1 : 0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(HorovodPort, AnotherUsersRequestIsClosedUnansweredAndTheJobsWorkerIsServed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to start a process of another user";
  TempDir dir;
  const auto d = dir.path.string();
  // Rank 0 writes the port, waits for DIR/go, then stores a key itself.
  const std::string worker =
      "[ \"$RANK\" = 0 ] || exit 0; echo $HOROVOD_GLOO_RENDEZVOUS_PORT > '" + d +
      "/port.new' && mv '" + d + "/port.new' '" + d + "/port'; while [ ! -e '" + d +
      "/go' ]; do sleep 0.05; done; "
      "exec 3<>/dev/tcp/$HOROVOD_GLOO_RENDEZVOUS_ADDR/$HOROVOD_GLOO_RENDEZVOUS_PORT || exit 9; "
      "printf 'PUT /global/own HTTP/1.1\\r\\nHost: h\\r\\nContent-Length: 1\\r\\n\\r\\nx' >&3; "
      "head -n 1 <&3";
  HvdrunProcess job({"-np", "2", "--min-np", "1", "/bin/bash", "-c", worker});
  int port = 0;
  for (int i = 0; i < 400 && port == 0; ++i) {
    std::ifstream(dir.path / "port") >> port;
    if (port == 0) std::this_thread::sleep_for(50ms);
  }
  ASSERT_GT(port, 0) << "rank 0 wrote no port";
  EXPECT_EQ(put_as_another_user(port), 0);
  std::ofstream(dir.path / "go").close();
  const auto r = job.finish(60s);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "refused the connection from 127.0.0.1:")) << r.err;
  EXPECT_TRUE(contains(r.err, "its process belongs to uid 65534, not to hvdrun's user (uid 0)"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:HTTP/1.1 200")) << r.out;  // its own worker's PUT
  // The job learned that it runs Horovod from its own worker only.
  const auto note = r.err.find("a worker stored a key in Horovod's rendezvous");
  ASSERT_NE(note, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("a worker stored a key", note + 1), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
