// Runs the real hvdrun binary for the integration tests: start it with pipes on its stdout
// and stderr, optionally signal it, and collect its output and exit status with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvdrun::itest {

struct RunResult {
  int status = -1;  // exit code, or 128 + signal; -1 if it had to be killed at the deadline
  std::string out;
  std::string err;
  double seconds = 0;
};

class HvdrunProcess {
 public:
  // Starts `hvdrun args...` with the test's environment plus `extra_env`, its stdin read from
  // `stdin_path` (not the test's own, whatever that is).
  explicit HvdrunProcess(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& extra_env = {},
                         const std::string& stdin_path = "/dev/null");
  // Another program in its place (salloc or sbatch running hvdrun): `program` a full path.
  HvdrunProcess(const std::string& program, const std::vector<std::string>& args,
                const std::map<std::string, std::string>& extra_env, const std::string& stdin_path);
  ~HvdrunProcess();
  HvdrunProcess(const HvdrunProcess&) = delete;
  HvdrunProcess& operator=(const HvdrunProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signo) const;
  // Reads what hvdrun writes until its stdout and stderr hold `count` lines that contain `text`
  // (a test waits for the event it needs, not for a time); false if `deadline` passed first or
  // hvdrun closed its output. What was read is kept: finish() returns it with the rest.
  bool wait_for_output(const std::string& text, std::size_t count,
                       std::chrono::milliseconds deadline = std::chrono::seconds(60));
  // Reads both pipes to EOF and reaps hvdrun; SIGKILLs it after `deadline` (from its start).
  RunResult finish(std::chrono::milliseconds deadline = std::chrono::seconds(60));

 private:
  using Clock = std::chrono::steady_clock;
  // Reads both pipes into out_text_ and err_text_ until `done()` holds (true), both closed or
  // `until` passed (false).
  bool read_until(const std::function<bool()>& done, Clock::time_point until);

  pid_t pid_ = -1;
  int out_ = -1;  // -1 once closed
  int err_ = -1;
  std::string out_text_;
  std::string err_text_;
  Clock::time_point started_;
};

RunResult run_hvdrun(const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& extra_env = {},
                     std::chrono::milliseconds deadline = std::chrono::seconds(60));

// A fresh directory under /tmp, removed with its contents on destruction.
struct TempDir {
  TempDir();
  ~TempDir();
  std::filesystem::path path;
};

// Waits until `count` files named *.pid exist in `dir`; returns the pids read from them.
std::vector<pid_t> wait_for_pids(const std::filesystem::path& dir, std::size_t count,
                                 std::chrono::milliseconds deadline);
// True while `pid` runs (a zombie counts as gone).
bool alive(pid_t pid);
// Waits until none of `pids` is alive; returns those still alive at the deadline.
std::vector<pid_t> wait_until_gone(const std::vector<pid_t>& pids,
                                   std::chrono::milliseconds deadline);

std::vector<std::string> lines_of(const std::string& text);
// Checks the lines of test_worker's flood mode, "[R]<stdout>:R:I:" padded with the letter x to 1000
// bytes with the newline): each whole, each rank's numbers 0, 1, 2, … without a gap (gtest
// expectations). `last_may_be_cut`: output abandoned at exit may end inside a line. Returns the
// number of lines per rank.
std::map<int, long> check_flood_lines(std::string out, bool last_may_be_cut);
bool contains(const std::string& text, const std::string& part);
// How many times `part` occurs in `text` (overlapping ones too).
std::size_t count_of(const std::string& text, const std::string& part);
// Whether each rank 0..ranks-1 wrote "rank R<said>" as a line of its own on stdout
// ("[R]<stdout>:rank R got SIGUSR1"); the first rank that did not, if any.
std::optional<int> rank_missing_line(const std::string& out, int ranks, const std::string& said);
std::string worker();  // path of the test worker program

// A shell script to stand as hvdrun-preflight: the real probe beside HVDRUN_BINARY, whose
// checks (the child process it runs them in) are killed by SIGABRT, as an abort() in a driver
// or library would end them, where the shell condition `crash_when` holds ("[ \"$LOCAL_RANK\"
// = 1 ]"). SIGABRT, not SIGSEGV: the sanitizers of the test builds catch SIGSEGV themselves.
std::string probe_whose_checks_crash(const std::string& crash_when);

}  // namespace hvdrun::itest
