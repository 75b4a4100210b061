// fork/execve spawner of workers and the RAII owner of children (process.h).
// Everything the child needs is prepared before fork(); between fork and exec the child
// makes only async-signal-safe calls.
#include "launcher/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <utility>

#include "hvdrun/error.h"
#include "launcher/process/signals_blocked.h"

namespace hvdrun::launcher {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
constexpr const char* kShell = "/bin/sh";
constexpr int kExecReportTimeoutMs = 30000;

std::string errno_text(int err) {
  return ::strerrordesc_np(err) ? ::strerrordesc_np(err) : "?";
}

// Everything the child uses, as plain C data, built before fork().
struct ChildPlan {
  std::string path;         // resolved program path
  int preset_errno = 0;     // the PATH search failed with this errno
  std::vector<char*> argv;  // null-terminated
  // /bin/sh PATH ARGS...: execvp's fallback for a file the kernel cannot execute (ENOEXEC: a
  // script without "#!"), which the shells and horovodrun's `env` also take.
  std::vector<char*> shell_argv;
  std::vector<char*> envp;  // null-terminated
  int devnull = -1;
  int in = -1;   // stdin; -1: devnull
  int out = -1;  // write ends, or -1 to inherit
  int err = -1;
  int report = -1;
  pid_t parent = 0;
  int max_fd = 1024;
  sigset_t mask{};
};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string path_of(const std::vector<std::string>& env) {
  for (const auto& entry : env) {
    if (entry.starts_with("PATH=")) return entry.substr(5);
  }
  const char* own = ::getenv("PATH");
  return own ? own : kDefaultPath;
}

// execvp's search, done in the parent: the first executable regular file along PATH.
// Returns the path, or sets `err` (EACCES if one was found but not executable, else ENOENT).
std::string resolve_program(const std::string& program, const std::vector<std::string>& env,
                            int& err) {
  err = 0;
  if (program.empty()) {
    err = ENOENT;
    return program;
  }
  if (program.find('/') != std::string::npos) return program;
  const std::string path_text = path_of(env);
  std::string_view path = path_text;
  bool denied = false;
  while (true) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      denied = true;
    }
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  err = denied ? EACCES : ENOENT;
  return program;
}

// The shell's statuses: 127 when the program was not found, 126 when it was found but could
// not be run (not executable, not a program, ...).
[[noreturn]] void child_fail(const ChildPlan& plan, int err) noexcept {
  ssize_t ignored = ::write(plan.report, &err, sizeof err);
  (void)ignored;
  ::_exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

void mark_fds_cloexec(const ChildPlan& plan) noexcept {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  for (int fd = 3; fd < plan.max_fd; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// Whether a file the kernel would not execute may be given to the shell: as bash decides, no
// NUL byte before the first line feed in its first 80 bytes (a broken binary is refused with
// ENOEXEC rather than read as commands). Async-signal-safe.
bool looks_like_text(const char* path) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char sample[80];
  const ssize_t got = ::read(fd, sample, sizeof sample);
  ::close(fd);
  for (ssize_t i = 0; i < got; ++i) {
    if (sample[i] == '\n') return true;
    if (sample[i] == '\0') return false;
  }
  return got >= 0;
}

// Runs in the child between fork and exec: async-signal-safe calls only. Every signal is
// blocked on entry (SignalsBlocked in spawn) until the handlers are reset: a signal sent to
// the new group at once must not run a handler inherited from the launcher.
[[noreturn]] void child_exec(const ChildPlan& plan) noexcept {
  if (::setpgid(0, 0) < 0) child_fail(plan, errno);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) child_fail(plan, errno);
  if (::getppid() != plan.parent) ::_exit(127);  // the launcher died before prctl
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  ::sigprocmask(SIG_SETMASK, &plan.mask, nullptr);
  if (plan.in == 0) {
    if (::fcntl(0, F_SETFD, 0) < 0) child_fail(plan, errno);  // dup2(0, 0) would keep CLOEXEC
  } else if (::dup2(plan.in >= 0 ? plan.in : plan.devnull, 0) < 0) {
    child_fail(plan, errno);
  }
  if (plan.out >= 0 && ::dup2(plan.out, 1) < 0) child_fail(plan, errno);
  if (plan.err >= 0 && ::dup2(plan.err, 2) < 0) child_fail(plan, errno);
  mark_fds_cloexec(plan);
  if (plan.preset_errno != 0) child_fail(plan, plan.preset_errno);
  ::execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
  const int err = errno;
  if (err == ENOEXEC && looks_like_text(plan.path.c_str())) {
    ::execve(kShell, plan.shell_argv.data(), plan.envp.data());
  }
  child_fail(plan, err);
}

int max_fd_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < 1048576) {
    return static_cast<int>(limit.rlim_cur);
  }
  return 1048576;
}

}  // namespace

Child::~Child() {
  kill_and_reap();
}

Child::Child(Child&& other) noexcept : pid_(other.pid_), reaped_(other.reaped_) {
  other.pid_ = -1;
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    pid_ = other.pid_;
    reaped_ = other.reaped_;
    other.pid_ = -1;
  }
  return *this;
}

void Child::kill_and_reap() noexcept {
  if (pid_ <= 0 || reaped_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);  // in case it died before setpgid
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

std::optional<ProcessEnd> Child::try_reap() {
  if (pid_ <= 0 || reaped_) return std::nullopt;
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return std::nullopt;
  if (got < 0)
    throw SystemError("waitpid(" + std::to_string(pid_) + ") failed: " + errno_text(errno),
                      "waitpid", errno);
  reaped_ = true;
  return ProcessEnd::decode(status);
}

ProcessEnd Child::wait() {
  if (pid_ <= 0 || reaped_) throw Error("waitpid: no child to wait for");
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0)
    throw SystemError("waitpid(" + std::to_string(pid_) + ") failed: " + errno_text(errno),
                      "waitpid", errno);
  reaped_ = true;
  return ProcessEnd::decode(status);
}

int Child::signal_group(int signo) const noexcept {
  if (pid_ <= 0) return ESRCH;
  return ::kill(-pid_, signo) == 0 ? 0 : errno;
}

int Child::signal_process(int signo) const noexcept {
  if (pid_ <= 0 || reaped_) return ESRCH;
  return ::kill(pid_, signo) == 0 ? 0 : errno;
}

bool signals_group(int signo) noexcept {
  return signo == SIGTERM || signo == SIGKILL || signo == SIGCONT || signo == 0;
}

pid_t Child::release() noexcept {
  return std::exchange(pid_, -1);
}

Spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const SpawnOptions& options) {
  if (argv.empty()) throw UsageError("no program to run");
  ChildPlan plan;
  plan.path = resolve_program(argv[0], env, plan.preset_errno);
  plan.argv = c_strings(argv);
  plan.shell_argv = {const_cast<char*>(kShell), plan.path.data()};
  plan.shell_argv.insert(plan.shell_argv.end(), plan.argv.begin() + 1, plan.argv.end());
  plan.envp = c_strings(env);
  plan.parent = ::getpid();
  plan.max_fd = max_fd_limit();
  if (options.child_mask != nullptr) {
    plan.mask = *options.child_mask;
  } else {
    ::sigemptyset(&plan.mask);
  }
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid())
    throw SystemError("cannot open /dev/null: " + errno_text(errno), "open", errno);
  plan.devnull = devnull.get();
  plan.in = options.stdin_fd;
  Pipe out, err;
  if (options.capture_output) {
    out = make_pipe();
    err = make_pipe();
    plan.out = out.write.get();
    plan.err = err.write.get();
  }
  Pipe report = make_pipe();
  plan.report = report.write.get();

  pid_t pid;
  int fork_errno;
  {
    // The child resets its handlers with every signal blocked, then sets plan.mask.
    const SignalsBlocked blocked;
    pid = ::fork();
    if (pid == 0) child_exec(plan);
    fork_errno = errno;
  }
  if (pid < 0)
    throw SystemError("fork failed for '" + argv[0] + "': " + errno_text(fork_errno), "fork",
                      fork_errno);
  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  return Spawned{Child(pid), std::move(out.read), std::move(err.read), std::move(report.read)};
}

int exec_error(Spawned& spawned) {
  if (!spawned.exec_report.valid()) return 0;
  UniqueFd report = std::move(spawned.exec_report);
  pollfd pfd{report.get(), POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&pfd, 1, kExecReportTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return 0;  // still not exec'd: treat as running; its exit will tell
  int err = 0;
  ssize_t got;
  do {
    got = ::read(report.get(), &err, sizeof err);
  } while (got < 0 && errno == EINTR);
  return got == static_cast<ssize_t>(sizeof err) ? err : 0;
}

std::string shell_command_line(const std::vector<std::string>& argv) {
  static constexpr std::string_view kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%";
  std::string line;
  for (const auto& word : argv) {
    if (!line.empty()) line += ' ';
    if (!word.empty() && word.find_first_not_of(kPlain) == std::string::npos) {
      line += word;
      continue;
    }
    line += '\'';
    for (char c : word) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

void ensure_standard_fds() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0) continue;
    // Read-only: a write to it fails with EBADF, as it would on the closed descriptor.
    int opened = ::open("/dev/null", O_RDONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

}  // namespace hvdrun::launcher
