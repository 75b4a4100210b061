// Worker program for the integration tests, one mode per behaviour under test:
//   chatty LINES BYTES BIG   many long lines at once, then one BIG-byte line, on stdout
//   partial                  output whose last line has no newline
//   progress                 "\r"-separated progress updates
//   fail RANK CODE           rank RANK writes to stderr and exits CODE; others wait
//   signal RANK SIGNO        rank RANK kills itself with SIGNO; others wait
//   sleep DIR [child]        records its pid (and a child's) in DIR, then waits
//   ignore-term DIR RANK     ignores SIGTERM and waits; rank RANK exits 1 after 300 ms
//   close-pipes RANK         closes stdout/stderr and waits; rank RANK exits 1 after 300 ms
//   orphan-pipe              leaves a child holding stdout, then exits 0
//   await-usr1 DIR           records its pid in DIR, waits for SIGUSR1, says so and exits 0
//   checkpoint DIR MS        records its pid in DIR and waits; on SIGTERM it "checkpoints" for
//                            MS ms, says "checkpoint done" and exits 0
//   flood DIR RANK CODE      records its pid in DIR; rank RANK exits CODE 300 ms after every
//                            rank recorded its pid (at most 20 s),
//                            the others write numbered lines "R:I:" padded with x to 1000 bytes on
//                            stdout without end (RANK -1: every rank writes)
// "Waits" is bounded: after 60 s a worker exits 4, so no test leaves strays behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

int rank() {
  const char* text = std::getenv("RANK");
  return text ? std::atoi(text) : -1;
}

void write_all(int fd, const std::string& text) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    std::size_t piece = std::min<std::size_t>(text.size() - sent, 1 << 20);
    ssize_t n = ::write(fd, text.data() + sent, piece);
    if (n <= 0) std::exit(5);
    sent += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void wait_to_be_killed() {
  std::this_thread::sleep_for(std::chrono::seconds(60));
  std::exit(4);
}

void record_pid(const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name + ".pid";
  {
    std::ofstream out(path + ".tmp");
    out << ::getpid() << "\n";
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

volatile sig_atomic_t caught = 0;
extern "C" void on_caught(int signo) {
  caught = signo;
}

// Records its pid, then waits (at most 30 s) for `signo`; exits 0 once it came.
int await_signal(const std::string& dir, int signo, int after_ms) {
  struct sigaction action {};
  action.sa_handler = on_caught;
  ::sigaction(signo, &action, nullptr);
  record_pid(dir, std::to_string(rank()));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!caught && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!caught) return 4;
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  write_all(1, "rank " + std::to_string(rank()) +
                   (signo == SIGTERM ? " checkpoint done\n" : " got SIGUSR1\n"));
  return 0;
}

int chatty(int lines, std::size_t bytes, std::size_t big) {
  int r = rank();
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += std::to_string(r) + ":" + std::to_string(i) + ":";
    text.append(bytes, static_cast<char>('a' + (r + i) % 26));
    text += '\n';
  }
  text += std::to_string(r) + ":big:" + std::string(big, 'Z') + "\n";
  write_all(1, text);
  write_all(2, "rank " + std::to_string(r) + " done\n");
  return 0;
}

int after_delay_or_wait(int failing_rank, int code) {
  if (rank() != failing_rank) wait_to_be_killed();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return code;
}

int sleep_mode(const std::string& dir, bool with_child) {
  std::string me = std::to_string(rank());
  if (with_child) {
    pid_t child = ::fork();
    if (child == 0) {
      record_pid(dir, me + ".child");
      wait_to_be_killed();
    }
  }
  record_pid(dir, me);
  wait_to_be_killed();
}

// Waits up to 20 s until DIR holds a pid file of every rank (WORLD_SIZE of them).
void wait_for_every_pid(const std::string& dir) {
  const char* size_text = std::getenv("WORLD_SIZE");
  const long size = size_text ? std::atol(size_text) : 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    long recorded = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".pid") ++recorded;
    }
    if (recorded >= size || std::chrono::steady_clock::now() > deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Every rank writes numbered 1000-byte lines to stdout, as fast as stdout takes them; the
// failing rank exits `code` after 300 ms (once every rank recorded its pid). If
// `failing_rank_writes`, it writes too, without ever blocking (whole lines, each an atomic
// pipe write), and exits once its stdout has taken nothing for 300 ms (at most after 30 s),
// so that it exits with its output waiting unread; it says how many lines it wrote.
[[noreturn]] void flood(const std::string& dir, int failing_rank, int code,
                        bool failing_rank_writes) {
  const int r = rank();
  record_pid(dir, std::to_string(r));
  if (r == failing_rank) wait_for_every_pid(dir);
  if (r == failing_rank && failing_rank_writes)
    ::fcntl(1, F_SETFL, ::fcntl(1, F_GETFL) | O_NONBLOCK);
  const auto start = std::chrono::steady_clock::now();
  auto last_taken = start;  // the failing rank's last line that stdout took
  for (long i = 0;; ++i) {
    const auto now = std::chrono::steady_clock::now();
    const auto elapsed = now - start;
    const bool stalled = !failing_rank_writes ||
                         now - last_taken > std::chrono::milliseconds(300) ||
                         elapsed > std::chrono::seconds(30);
    if (r == failing_rank && elapsed > std::chrono::milliseconds(300) && stalled) {
      std::string text = "rank " + std::to_string(r) + " failing with " + std::to_string(code);
      if (failing_rank_writes) text += " after " + std::to_string(i) + " lines";
      write_all(2, text + "\n");
      std::exit(code);
    }
    if (elapsed > std::chrono::seconds(60)) std::exit(4);
    if (r == failing_rank && failing_rank_writes) {
      std::string line = std::to_string(r) + ":" + std::to_string(i) + ":";
      line.resize(999, 'x');
      line += '\n';
      if (::write(1, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        --i;  // EAGAIN: nothing was written (a pipe write of up to PIPE_BUF is all or nothing)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      } else {
        last_taken = std::chrono::steady_clock::now();
      }
      continue;
    }
    if (r == failing_rank) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    std::string line = std::to_string(r) + ":" + std::to_string(i) + ":";
    line.resize(999, 'x');
    write_all(1, line + "\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i) { return i < argc ? std::string(argv[i]) : std::string(); };
  if (mode == "chatty") return chatty(std::stoi(arg(2)), std::stoul(arg(3)), std::stoul(arg(4)));
  if (mode == "partial") {
    write_all(1, "first line\nno newline at the end");
    write_all(2, "stderr without newline");
    return 0;
  }
  if (mode == "progress") {
    write_all(1, "10%\r20%\r");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    write_all(1, "\ndone\r\n");
    return 0;
  }
  if (mode == "fail") {
    int failing = std::stoi(arg(2));
    if (rank() == failing)
      write_all(2, "first stderr line\nrank " + arg(2) + " failing with " + arg(3) + "\n");
    return after_delay_or_wait(failing, std::stoi(arg(3)));
  }
  if (mode == "signal") {
    int signo = std::stoi(arg(3));
    after_delay_or_wait(std::stoi(arg(2)), 0);
    struct rlimit no_core {
      0, 0
    };
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(signo, SIG_DFL);
    ::raise(signo);
    return 6;
  }
  if (mode == "sleep") sleep_mode(arg(2), arg(3) == "child");
  if (mode == "ignore-term") {
    ::signal(SIGTERM, SIG_IGN);
    record_pid(arg(2), std::to_string(rank()));
    return after_delay_or_wait(std::stoi(arg(3)), 1);
  }
  if (mode == "close-pipes") {
    if (rank() != std::stoi(arg(2))) {
      ::close(1);
      ::close(2);
    }
    return after_delay_or_wait(std::stoi(arg(2)), 1);
  }
  if (mode == "flood") flood(arg(2), std::stoi(arg(3)), std::stoi(arg(4)), arg(5) == "writes");
  if (mode == "orphan-pipe") {
    if (::fork() == 0) wait_to_be_killed();
    write_all(1, "parent leaving\n");
    return 0;
  }
  if (mode == "await-usr1") return await_signal(arg(2), SIGUSR1, 0);
  if (mode == "checkpoint") return await_signal(arg(2), SIGTERM, std::stoi(arg(3)));
  std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
  return 64;
}
