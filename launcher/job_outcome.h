// How each rank ended (local or remote) and what ended the job first; the exit status and the
// failure summary that follow from it. Pure data and formatting; used on the io thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "launcher/output.h"
#include "launcher/placement.h"
#include "launcher/worker_id.h"
#include "process.h"
#include "remote_exit.h"

namespace hvdrun::launcher {

// A rank's end. kFailed: the rank never ran or its host was lost (an SSH failure); the shell
// status is 255, as ssh(1) reports its own failures.
struct RankEnd {
  enum class Kind { kExited, kSignaled, kFailed };
  Kind kind = Kind::kExited;
  int value = 0;        // exit code or signal number
  std::string message;  // kFailed: what happened, naming the host; else an extra cause
  int pid = 0;          // a local worker's pid, for messages; 0 for remote workers

  static RankEnd from_local(ExitStatus status, std::string cause = {});
  static RankEnd from_remote(const ssh::RemoteExit& exit);
  bool success() const noexcept { return kind == Kind::kExited && value == 0; }
  int shell_code() const noexcept;
  // "exit code 3", "killed by signal SIGKILL (9)", or the failure message.
  std::string describe() const;
  // "exited with code 3", "was killed by ...", or the failure message: for the first note.
  std::string what_happened() const;
};

// What ended the job first; later events do not change it.
struct Outcome {
  enum class Kind { kWorkerFailed, kInterrupted, kJobError, kHostFailed };
  Kind kind = Kind::kJobError;
  // kWorkerFailed: the worker, its rank and host then, and how it ended.
  WorkerId worker;
  int rank = 0;
  std::string host;
  RankEnd end;
  int signo = 0;        // kInterrupted
  std::string message;  // kJobError, kHostFailed

  static Outcome worker_failed(const WorkerId& worker, const Slot& slot, RankEnd end);
  static Outcome interrupted(int signo);
  static Outcome failed(Kind kind, std::string message);  // kJobError or kHostFailed
};

// 0 without an outcome; the failed rank's shell code; 128+signal; 1 for a rendezvous failure;
// 255 for a host that could not be reached or started.
int outcome_exit_status(const std::optional<Outcome>& outcome);

// The "job failed: ..." lines (nothing for success or an interrupt).
void print_outcome_summary(const std::optional<Outcome>& outcome, const OutputSink& sink);

}  // namespace hvdrun::launcher
