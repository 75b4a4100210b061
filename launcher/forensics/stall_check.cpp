// find_stall() (stall_check.h).
#include "launcher/forensics/stall_check.h"

#include <algorithm>

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kNamedAtMost = 8;  // missing ranks named in the line; the rest counted

std::string seconds_text(std::chrono::milliseconds d) {
  return std::to_string((d.count() + 500) / 1000) + " s";
}

// "allreduce (float32, 4.0 MiB)" with "#N" after its kind.
std::string numbered(const std::string& what, std::uint32_t sequence) {
  const auto space = what.find(' ');
  const std::string number = " #" + std::to_string(sequence);
  if (space == std::string::npos) return what + number;
  return what.substr(0, space) + number + what.substr(space);
}

std::string last_of(const rdzv::MemberProgress& m) {
  if (!m.report) return "it has not entered any collective of this generation";
  const auto& r = *m.report;
  if (r.waiting()) {
    return "it waits in " + numbered(r.what, r.entered) + " since " +
           seconds_text(std::chrono::milliseconds(r.in_ms) + m.age) + " ago";
  }
  return "its last collective, #" + std::to_string(r.finished) + ", ended " +
         seconds_text(std::chrono::milliseconds(r.finished_ago_ms) + m.age) + " ago";
}

}  // namespace

std::optional<Stall> find_stall(const std::vector<rdzv::MemberProgress>& members,
                                std::chrono::milliseconds timeout) {
  std::uint32_t top = 0;
  for (const auto& m : members) {
    if (m.report) top = std::max(top, m.report->entered);
  }
  if (top == 0) return std::nullopt;
  Stall stall;
  stall.sequence = top;
  stall.size = members.size();
  for (const auto& m : members) {
    if (!m.report || m.report->entered < top) {
      stall.missing.push_back(m);
      continue;
    }
    if (!m.report->waiting()) continue;  // through it already (a broadcast's root)
    stall.waiting.push_back(m.rank);
    stall.what = m.report->what;
    stall.waited = std::max(stall.waited, std::chrono::milliseconds(m.report->in_ms) + m.age);
  }
  if (stall.waiting.empty() || stall.waited < timeout) return std::nullopt;
  return stall;
}

std::vector<int> Stall::culprits() const {
  if (missing.empty()) return waiting;
  std::vector<int> ranks;
  for (const auto& m : missing) ranks.push_back(m.rank);
  return ranks;
}

std::string Stall::describe() const {
  std::string text = numbered(what, sequence) + " waits " + seconds_text(waited) + " on " +
                     std::to_string(waiting.size()) + " of " + std::to_string(size) + " ranks";
  if (missing.empty()) return text + "; every rank entered it (a transfer does not progress)";
  for (std::size_t i = 0; i < missing.size() && i < kNamedAtMost; ++i) {
    const auto& m = missing[i];
    text += "; rank " + std::to_string(m.rank) + " (host " + m.host +
            (m.pid ? ", pid " + std::to_string(m.pid) : std::string()) +
            ") has not entered it: " + last_of(m);
  }
  if (missing.size() > kNamedAtMost) {
    text += "; and " + std::to_string(missing.size() - kNamedAtMost) + " more ranks";
  }
  return text;
}

}  // namespace hvdrun::launcher
