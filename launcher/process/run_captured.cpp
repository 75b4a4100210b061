// run_captured (run_captured.h): poll on the child's two pipes until both end or the deadline.
#include "launcher/process/run_captured.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/process/process.h"

namespace hvdrun::launcher {

Captured run_captured(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      std::chrono::milliseconds timeout, std::size_t limit) {
  Spawned spawned = spawn(argv, env);
  exec_error(spawned);
  Captured result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string ignored;
  char buffer[4096];
  while (spawned.out.valid() || spawned.err.valid()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      spawned.child.signal_group(SIGKILL);
      break;
    }
    pollfd fds[2] = {{spawned.out.get(), POLLIN, 0}, {spawned.err.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      UniqueFd& fd = i == 0 ? spawned.out : spawned.err;
      if (got <= 0) {
        fd.reset();
        continue;
      }
      std::string& into = i == 0 ? result.out : ignored;
      into.append(buffer, static_cast<std::size_t>(got));
      if (into.size() > limit) into.resize(limit);
      ignored.clear();
    }
  }
  result.end = spawned.child.wait();
  return result;
}

}  // namespace hvdrun::launcher
