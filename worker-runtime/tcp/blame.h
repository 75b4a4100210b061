// Naming the rank a ring failure started at. When a rank fails, its neighbours see their links
// close and close their own, so a rank further away sees only a healthy neighbour hang up. Each
// rank therefore posts its attribution to a FailureBoard before it closes its links, and a rank
// that saw a neighbour close (or stall) follows the neighbours' reports to the first failure.
// Reads HVDRUN_TIMEOUT only through RingPlace::wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "worker-runtime/tcp/failure_board.h"

namespace hvdrun::tcp {

struct RingPlace {
  int rank = 0;
  int size = 1;
  std::uint32_t generation = 0;
  // "addr:port" of this rank's data listener and its neighbours': a report names its culprit's,
  // which the poster knows (the culprit is itself or a neighbour).
  std::string self_addr;
  int prev_rank = 0, next_rank = 0;
  std::string prev_addr, next_addr;
  // Longest wait for the report of a neighbour that stalled (it may be failing at the same
  // moment). A neighbour that closed its link posted first, so that read does not wait.
  std::chrono::milliseconds wait{1000};
};

// Posts this rank's report for `error` (the failure of the collective `what`, an hvdrun::Error)
// and returns the error to throw: `error` itself when this rank saw the first failure,
// otherwise an error of the same kind that names the rank the failure started at, who saw it,
// and what this rank saw. Never throws; a board that fails counts as holding no reports.
std::exception_ptr attribute_failure(FailureBoard& board, const RingPlace& place,
                                     std::string_view what, std::exception_ptr error) noexcept;

}  // namespace hvdrun::tcp
