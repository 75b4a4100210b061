// The launcher's own output: spdlog loggers "launcher", "rdzv", "ssh" and "agents" on stderr
// (level from --log-level / HVDRUN_LOG_LEVEL, JobSpec::log_level), and the unprefixed "hvdrun: ..."
// lines a user reads (failures, --verbose phases) on the logger "note". While a LogRoute lives, all
// of them go to the job's Console instead, queued behind the workers' stderr lines.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace hvdrun::launcher {

class Console;

// Sets level and pattern of the loggers (common/logger.h). An unknown level name means "warn".
void setup_logging(const std::string& level);
// The "launcher" logger.
std::shared_ptr<spdlog::logger> launcher_log();

// Writes "hvdrun: <text>\n" to stderr as one line (never torn by worker output). Thread-safe.
void note(const std::string& text);

// Sends the launcher's loggers and notes to `console`'s stderr while it lives; then back to
// stderr. Create it before any thread logs, destroy it after they are gone.
class LogRoute {
 public:
  LogRoute(Console& console, const std::string& level);
  ~LogRoute();
  LogRoute(const LogRoute&) = delete;
  LogRoute& operator=(const LogRoute&) = delete;

 private:
  std::string level_;
};

// While it lives, notes are not said but errors and warnings (a run whose lines would only
// confuse: preflight's probes, which are ranks of a job of their own); then they go where they
// went before. Create it after any LogRoute of its time, destroy it before.
class NoteHold {
 public:
  NoteHold();
  ~NoteHold();
  NoteHold(const NoteHold&) = delete;
  NoteHold& operator=(const NoteHold&) = delete;

 private:
  std::vector<spdlog::sink_ptr> held_;
};

// "1 rank", "3 ranks": a count and its noun, for notes.
std::string plural(std::size_t n, const char* word);

// "a, b, c and 4 more": up to 3 names and how many more, for notes.
std::string some_of(const std::vector<std::string>& names);

// "12.3 ms": the time since `start`, for --verbose phase lines; `elapsed` so written.
std::string millis_since(std::chrono::steady_clock::time_point start);
std::string millis(std::chrono::steady_clock::duration elapsed);

}  // namespace hvdrun::launcher
