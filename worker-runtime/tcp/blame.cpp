// attribute_failure() and the report codec (see blame.h and failure_board.h).
#include "worker-runtime/tcp/blame.h"

#include <charconv>

#include "hvdrun/error.h"
#include "worker-runtime/error_context.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/tcp/transfer.h"

namespace hvdrun::tcp {
namespace {

bool parse_rank(std::string_view text, int size, int& rank) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
  return ec == std::errc() && end == text.data() + text.size() && rank >= 0 && rank < size;
}

std::string peer_text(const RingPlace& place, int rank) {
  const rdzv::PeerAddr& peer = (*place.peers)[rank];
  return "rank " + std::to_string(rank) + " (" + peer.addr + ":" + std::to_string(peer.port) + ")";
}

void post_quietly(FailureBoard& board, const RingPlace& place, const FailureReport& report) {
  try {
    board.post(place.rank, encode(report));
  } catch (const std::exception& e) {
    runtime_log().warn("ring: cannot post the failure report of rank {}: {}", place.rank, e.what());
  }
}

std::optional<FailureReport> read_quietly(FailureBoard& board, const RingPlace& place, int rank,
                                          std::chrono::milliseconds wait) {
  try {
    return decode_report(board.read(rank, wait), place.size);
  } catch (const std::exception& e) {
    runtime_log().warn("ring: cannot read the failure report of rank {}: {}", rank, e.what());
    return std::nullopt;
  }
}

// Follows the reports from `found.culprit` on until a rank has none (it failed without
// reporting: it died) or blames itself or a rank already visited.
FailureReport follow(FailureBoard& board, const RingPlace& place, FailureReport found,
                     std::chrono::milliseconds wait) {
  std::vector<bool> visited(static_cast<std::size_t>(place.size), false);
  visited[place.rank] = true;
  for (int next = found.culprit; !visited[next]; next = found.culprit) {
    visited[next] = true;
    const std::optional<FailureReport> report = read_quietly(board, place, next, wait);
    if (!report) break;
    found = *report;
  }
  return found;
}

std::exception_ptr same_kind(std::exception_ptr error, const std::string& message) {
  try {
    rethrow_with_message(error, message);
  } catch (...) {
    return std::current_exception();
  }
}

std::exception_ptr attribute(FailureBoard& board, const RingPlace& place, std::string_view what,
                             std::exception_ptr error) {
  std::string text;
  const LinkFault* fault = nullptr;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    text = e.what();
    fault = dynamic_cast<const LinkFault*>(&e);
  }
  const FailureReport own = fault ? FailureReport{fault->peer, place.rank, fault->how}
                                  : FailureReport{place.rank, place.rank, text};
  FailureReport found = own;
  if (fault && fault->kind != LinkFault::Kind::kBreach) {
    const bool stalled = fault->kind == LinkFault::Kind::kStalled;
    // A stalled neighbour may be timing out on its own neighbour right now: post first, so
    // that ranks further away can follow this report while this rank waits for the next.
    if (stalled) post_quietly(board, place, own);
    found = follow(board, place, own, stalled ? place.wait : std::chrono::milliseconds(0));
  }
  post_quietly(board, place, found);
  if (found.seen_by == place.rank) return error;
  runtime_log().debug("ring: rank {} reports that rank {} failed first", found.seen_by,
                      found.culprit);
  return same_kind(
      error, std::string(what) + ": " + peer_text(place, found.culprit) + " failed: " + found.how +
                 " (seen by rank " + std::to_string(found.seen_by) + ", generation " +
                 std::to_string(place.generation) + "); here: " + (fault ? fault->observed : text));
}

}  // namespace

std::string encode(const FailureReport& report) {
  return std::to_string(report.culprit) + " " + std::to_string(report.seen_by) + " " + report.how;
}

std::optional<FailureReport> decode_report(std::string_view text, int size) {
  const std::size_t first = text.find(' ');
  if (first == std::string_view::npos) return std::nullopt;
  const std::size_t second = text.find(' ', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  FailureReport report;
  if (!parse_rank(text.substr(0, first), size, report.culprit) ||
      !parse_rank(text.substr(first + 1, second - first - 1), size, report.seen_by)) {
    return std::nullopt;
  }
  report.how = std::string(text.substr(second + 1));
  return report;
}

std::exception_ptr attribute_failure(FailureBoard& board, const RingPlace& place,
                                     std::string_view what, std::exception_ptr error) noexcept {
  try {
    return attribute(board, place, what, error);
  } catch (...) {  // e.g. bad_alloc while composing: keep this rank's own error
    return error;
  }
}

}  // namespace hvdrun::tcp
