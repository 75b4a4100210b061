// Where the ranks of one ring generation post what broke their ring, so that a rank that only
// saw a neighbour close (or stall) can name the rank the failure started at. The Ring only
// knows this interface; the job posts through the rendezvous key-value store, tests through
// an in-process board. A report is a small text (FailureReport, encoded below).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace hvdrun::tcp {

// Posting and reading may fail (the store is gone); callers treat a failure as "no report".
// Thread rules: each rank's Ring calls from its own collective thread; an implementation
// shared by several rings in one process must be thread-safe.
class FailureBoard {
 public:
  virtual ~FailureBoard() = default;
  // Records (or replaces) rank `rank`'s report. Returns once readers can see it.
  virtual void post(int rank, const std::string& report) = 0;
  // Rank `rank`'s report, waiting up to `wait` for one; empty when it posted none.
  virtual std::string read(int rank, std::chrono::milliseconds wait) = 0;
};

// The failure a rank attributes its broken ring to: rank `culprit` did `how`, as rank
// `seen_by` observed it. culprit == seen_by: the rank failed on its own (how: its error).
struct FailureReport {
  int culprit = -1;
  int seen_by = -1;
  std::string where;  // the culprit's data listener, "addr:port" (no spaces); empty: unknown
  std::string how;    // "connection lost: closed by peer", "sent no data for 60 s", ...
};

std::string encode(const FailureReport& report);
// Nullopt for an empty or malformed text, or ranks outside [0, size).
std::optional<FailureReport> decode_report(std::string_view text, int size);

}  // namespace hvdrun::tcp
