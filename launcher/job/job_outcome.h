// What ended the job first; the exit status and the
// failure summary that follow from it. Pure data and formatting; used on the io thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/process_end.h"
#include "launcher/output/output.h"
#include "launcher/plan/placement.h"
#include "launcher/plan/worker_id.h"

namespace hvdrun::launcher {

// What ended the job first; later events do not change it.
struct Outcome {
  enum class Kind { kWorkerFailed, kInterrupted, kJobError, kHostFailed };
  Kind kind = Kind::kJobError;
  // kWorkerFailed: the worker, its rank and host then, and how it ended.
  WorkerId worker;
  int rank = 0;
  std::string host;
  ProcessEnd end;
  // kWorkerFailed: the limit that made this failure the job's ("no restart left:
  // --max-restarts 2 used"; empty without one), and whether the job went on after earlier
  // failures (then this one is its last, not its first).
  std::string exhausted;
  bool after_others = false;
  int signo = 0;                       // kInterrupted
  std::size_t killed_after_grace = 0;  // kInterrupted: ranks SIGKILLed when the grace was over
  std::string message;  // kJobError, kHostFailed; kInterrupted: the signal and its sender

  static Outcome worker_failed(const WorkerId& worker, const Slot& slot, ProcessEnd end);
  static Outcome interrupted(int signo, std::string sent_by);
  static Outcome failed(Kind kind, std::string message);  // kJobError or kHostFailed
};

// 0 without an outcome; the failed rank's shell code; 128+signal; 1 for a rendezvous failure;
// 255 for a host that could not be reached or started.
int outcome_exit_status(const std::optional<Outcome>& outcome);

// The "job failed: ..." lines (nothing for success): "first failure was" the rank, or "last
// failure was" it after others, with the limit it exhausted if any; for a signal, "job stopped
// by" it and its sender, no rank blamed.
void print_outcome_summary(const std::optional<Outcome>& outcome, const OutputSink& sink);

}  // namespace hvdrun::launcher
