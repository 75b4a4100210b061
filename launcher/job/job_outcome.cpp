// Outcome, the job's exit status and its failure summary (job_outcome.h).
#include "launcher/job/job_outcome.h"

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

Outcome Outcome::worker_failed(const WorkerId& worker, const Slot& slot, ProcessEnd end) {
  Outcome outcome;
  outcome.kind = Kind::kWorkerFailed;
  outcome.worker = worker;
  outcome.rank = slot.rank;
  outcome.host = slot.host;
  outcome.end = std::move(end);
  return outcome;
}

Outcome Outcome::interrupted(int signo, std::string sent_by) {
  Outcome outcome;
  outcome.kind = Kind::kInterrupted;
  outcome.signo = signo;
  outcome.message = std::move(sent_by);
  return outcome;
}

Outcome Outcome::failed(Kind kind, std::string message) {
  Outcome outcome;
  outcome.kind = kind;
  outcome.message = std::move(message);
  return outcome;
}

int outcome_exit_status(const std::optional<Outcome>& outcome) {
  if (!outcome) return 0;
  switch (outcome->kind) {
    case Outcome::Kind::kWorkerFailed:
      return outcome->end.shell_code();
    case Outcome::Kind::kInterrupted:
      return 128 + outcome->signo;
    case Outcome::Kind::kJobError:
      return 1;
    case Outcome::Kind::kHostFailed:
      return 255;
  }
  return 1;
}

void print_outcome_summary(const std::optional<Outcome>& outcome, const OutputSink& sink) {
  if (!outcome) return;
  if (outcome->kind == Outcome::Kind::kInterrupted) {
    const std::size_t killed = outcome->killed_after_grace;
    note("job stopped by " + outcome->message + ", not by a failed rank" +
         (killed == 0 ? ""
                      : "; " + std::to_string(killed) + " rank" + (killed == 1 ? "" : "s") +
                            " killed with SIGKILL when the grace period was over"));
    return;
  }
  if (outcome->kind != Outcome::Kind::kWorkerFailed) {
    note("job failed: " + outcome->message);
    return;
  }
  const auto rank = std::to_string(outcome->rank);
  note(std::string("job failed: ") + (outcome->after_others ? "last" : "first") +
       " failure was rank " + rank + " on " + outcome->host + ": " + outcome->end.describe() +
       (outcome->exhausted.empty() ? "" : " (" + outcome->exhausted + ")"));
  const auto& tail = sink.last_stderr_lines(outcome->worker);
  if (tail.empty()) return;
  std::string text = "last stderr lines of rank " + rank + ":";
  for (const auto& line : tail) text += "\n    " + line;
  note(text);
}

}  // namespace hvdrun::launcher
