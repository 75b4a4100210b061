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

constexpr std::string_view kUnknown = "-";  // an unknown address in an encoded report

// The data listener of `rank` as this rank knows it: its own or a neighbour's; else empty.
std::string address_of(const RingPlace& place, int rank) {
  if (rank == place.rank) return place.self_addr;
  if (rank == place.next_rank) return place.next_addr;
  if (rank == place.prev_rank) return place.prev_addr;
  return {};
}

std::string culprit_text(const FailureReport& report) {
  const std::string rank = "rank " + std::to_string(report.culprit);
  return report.where.empty() ? rank : rank + " (" + report.where + ")";
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
  const FailureReport own =
      fault ? FailureReport{fault->peer, place.rank, address_of(place, fault->peer), fault->how}
            : FailureReport{place.rank, place.rank, place.self_addr, text};
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
  return same_kind(error, std::string(what) + ": " + culprit_text(found) + " failed: " + found.how +
                              " (seen by rank " + std::to_string(found.seen_by) + ", generation " +
                              std::to_string(place.generation) +
                              "); here: " + (fault ? fault->observed : text));
}

}  // namespace

std::string encode(const FailureReport& report) {
  const bool known = !report.where.empty() && report.where.find(' ') == std::string::npos;
  return std::to_string(report.culprit) + " " + std::to_string(report.seen_by) + " " +
         (known ? report.where : std::string(kUnknown)) + " " + report.how;
}

std::optional<FailureReport> decode_report(std::string_view text, int size) {
  std::string_view fields[3];  // culprit, seen_by, where; the rest is `how`
  for (auto& field : fields) {
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    field = text.substr(0, space);
    text.remove_prefix(space + 1);
  }
  FailureReport report;
  if (!parse_rank(fields[0], size, report.culprit) ||
      !parse_rank(fields[1], size, report.seen_by) || fields[2].empty()) {
    return std::nullopt;
  }
  if (fields[2] != kUnknown) report.where = std::string(fields[2]);
  report.how = std::string(text);
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
