// Starting the remote agent's worker (agent_worker.h): fork/exec with a close-on-exec report
// pipe, the worker leading its own process group, SIGKILL when the agent dies.
#include "agent_worker.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "hvdrun/error.h"

extern char** environ;

namespace hvdrun::launcher::ssh {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the forked child: only plain syscalls, then exec. Reports errno on `report` and exits 127.
[[noreturn]] void exec_child(char* const* argv, char** envp, int out, int err, int report,
                             pid_t agent, const sigset_t& mask) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != agent) ::_exit(127);  // the agent died before prctl took effect
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) {
    const int e = errno;
    [[maybe_unused]] auto n = ::write(report, &e, sizeof e);
    ::_exit(127);
  }
  for (int signo = 1; signo < NSIG; ++signo) ::signal(signo, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  environ = envp;  // so that execvp searches the worker's PATH
  ::execvp(argv[0], argv);
  const int e = errno;
  [[maybe_unused]] auto n = ::write(report, &e, sizeof e);
  ::_exit(127);
}

// Blocks until the report pipe closes (exec done) or carries an errno.
int wait_exec_report(int fd) {
  int value = 0;
  std::size_t got = 0;
  while (got < sizeof value) {
    const ssize_t n = ::read(fd, reinterpret_cast<char*>(&value) + got, sizeof value - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return got == 0 ? 0 : EIO;
    got += static_cast<std::size_t>(n);
  }
  return value;
}

}  // namespace

std::vector<std::string> overlay_environment(const std::vector<std::string>& base,
                                             const std::vector<std::string>& overlay) {
  std::vector<std::string> out;
  std::unordered_map<std::string, std::size_t> index;
  const auto put = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    if (auto it = index.find(name); it != index.end()) {
      out[it->second] = entry;
    } else {
      index.emplace(name, out.size());
      out.push_back(entry);
    }
  };
  for (const auto& entry : base) put(entry);
  for (const auto& entry : overlay) put(entry);
  return out;
}

AgentWorker start_agent_worker(const AgentSpec& spec, const std::vector<std::string>& env,
                               const sigset_t& child_mask) {
  PipePair out = make_cloexec_pipe();
  PipePair err = make_cloexec_pipe();
  PipePair report = make_cloexec_pipe();
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(env);
  const pid_t agent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    exec_child(argv.data(), envp.data(), out.write.get(), err.write.get(), report.write.get(),
               agent, child_mask);
  }
  ::setpgid(pid, pid);  // also in the parent, so that the group exists before any kill(-pid)
  report.write.reset();
  out.write.reset();
  err.write.reset();
  AgentWorker worker;
  worker.pid = pid;
  worker.out = std::move(out.read);
  worker.err = std::move(err.read);
  worker.exec_errno = wait_exec_report(report.read.get());
  return worker;
}

}  // namespace hvdrun::launcher::ssh
