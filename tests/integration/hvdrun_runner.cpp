// HvdrunProcess and the pid helpers of the integration tests (hvdrun_runner.h).
#include "tests/integration/hvdrun_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/proc_file.h"

extern char** environ;

namespace hvdrun::itest {
namespace {

using Clock = std::chrono::steady_clock;

int decode(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

HvdrunProcess::HvdrunProcess(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& extra_env,
                             const std::string& stdin_path)
    : HvdrunProcess(HVDRUN_BINARY, args, extra_env, stdin_path) {}

HvdrunProcess::HvdrunProcess(const std::string& program, const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& extra_env,
                             const std::string& stdin_path) {
  // The test's environment, minus what the tests expect hvdrun to choose itself unless they
  // pass it (a machine with OMP_NUM_THREADS set must not change what they see).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    if (!extra_env.contains(name) && name != "OMP_NUM_THREADS") env.push_back(entry);
  }
  for (const auto& [name, value] : extra_env) env.push_back(name + "=" + value);
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv, c_env;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  for (auto& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0) throw std::runtime_error("pipe");
  const int in = ::open(stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw std::runtime_error("cannot open " + stdin_path);
  started_ = Clock::now();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    ::_exit(126);
  }
  ::close(in);
  ::close(out[1]);
  ::close(err[1]);
  out_ = out[0];
  err_ = err[0];
}

HvdrunProcess::~HvdrunProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

void HvdrunProcess::signal(int signo) const {
  ::kill(pid_, signo);
}

bool HvdrunProcess::read_until(const std::function<bool()>& done, Clock::time_point until) {
  int* fds[2] = {&out_, &err_};
  std::string* sinks[2] = {&out_text_, &err_text_};
  char buffer[65536];
  for (;;) {
    if (done()) return true;
    if (out_ < 0 && err_ < 0) return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd polled[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};  // poll skips a closed one (-1)
    if (::poll(polled, 2, static_cast<int>(left)) < 0 && errno != EINTR) return false;
    for (int i = 0; i < 2; ++i) {
      if (*fds[i] < 0 || polled[i].revents == 0) continue;
      const ssize_t n = ::read(*fds[i], buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(*fds[i]);
        *fds[i] = -1;
      }
    }
  }
}

bool HvdrunProcess::wait_for_output(const std::string& text, std::size_t count,
                                    std::chrono::milliseconds deadline) {
  const auto seen = [&] {
    std::size_t lines = 0;
    for (const std::string* stream : {&out_text_, &err_text_}) {
      for (const auto& line : lines_of(*stream)) lines += contains(line, text) ? 1 : 0;
    }
    return lines >= count;
  };
  return read_until(seen, Clock::now() + deadline);
}

RunResult HvdrunProcess::finish(std::chrono::milliseconds deadline) {
  RunResult result;
  const auto end = started_ + deadline;
  const auto closed = [this] { return out_ < 0 && err_ < 0; };
  bool killed = false;
  if (!read_until(closed, end)) {
    ::kill(pid_, SIGKILL);
    killed = true;
    read_until(closed, end + std::chrono::seconds(5));
  }
  result.out = std::move(out_text_);
  result.err = std::move(err_text_);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  result.status = killed ? -1 : decode(status);
  result.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  return result;
}

RunResult run_hvdrun(const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& extra_env,
                     std::chrono::milliseconds deadline) {
  HvdrunProcess process(args, extra_env);
  return process.finish(deadline);
}

TempDir::TempDir() {
  char name[] = "/tmp/hvdrun-itest-XXXXXX";
  if (!::mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
  path = name;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::vector<pid_t> wait_for_pids(const std::filesystem::path& dir, std::size_t count,
                                 std::chrono::milliseconds deadline) {
  auto end = Clock::now() + deadline;
  for (;;) {
    std::vector<pid_t> pids;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".pid") continue;
      std::ifstream in(entry.path());
      pid_t pid = 0;
      if (in >> pid) pids.push_back(pid);
    }
    if (pids.size() >= count || Clock::now() > end) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  const std::string text = test::read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  auto close_paren = text.rfind(')');
  return close_paren == std::string::npos || text.size() < close_paren + 3 ||
         text[close_paren + 2] != 'Z';
}

std::vector<pid_t> wait_until_gone(const std::vector<pid_t>& pids,
                                   std::chrono::milliseconds deadline) {
  auto end = Clock::now() + deadline;
  for (;;) {
    std::vector<pid_t> left;
    for (pid_t pid : pids) {
      if (alive(pid)) left.push_back(pid);
    }
    if (left.empty() || Clock::now() > end) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string worker() {
  return TEST_WORKER;
}

std::optional<int> rank_missing_line(const std::string& out, int ranks, const std::string& said) {
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string r = std::to_string(rank);
    if (!contains(out, "[" + r + "]<stdout>:rank " + r + said + "\n")) return rank;
  }
  return std::nullopt;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1)) ++n;
  return n;
}

std::map<int, long> check_flood_lines(std::string out, bool last_may_be_cut) {
  if (last_may_be_cut) out.erase(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  std::map<int, long> next;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    int rank = -1;
    long number = -1;
    int used = 0;
    EXPECT_EQ(std::sscanf(line.c_str(), "[%d]<stdout>:%*d:%ld:%n", &rank, &number, &used), 2)
        << line.substr(0, 60);
    if (rank < 0) continue;
    const std::string prefix = "[" + std::to_string(rank) + "]<stdout>:";
    EXPECT_EQ(line.size(), prefix.size() + 999) << "torn line: " << line.substr(0, 60);
    EXPECT_EQ(line.find_first_not_of('x', static_cast<std::size_t>(used)), std::string::npos)
        << line.substr(0, 60);
    EXPECT_EQ(number, next[rank]) << "rank " << rank << ": a line is missing before this one";
    next[rank] = number + 1;
  }
  return next;
}

std::string probe_whose_checks_crash(const std::string& crash_when) {
  const std::string probe = std::string(HVDRUN_BINARY) + "-preflight";
  return "#!/bin/sh\nif " + crash_when + "; then\n  " + probe +
         " \"$@\" & p=$!\n  while ! c=$(pgrep -P $p); do sleep 0.01; done\n"
         "  kill -ABRT $c\n  wait $p\n  exit $?\nfi\nexec " +
         probe + " \"$@\"\n";
}

}  // namespace hvdrun::itest
