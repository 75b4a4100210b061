// The generation log (generation_log.h).
#include "launcher/job/generation_log.h"

#include <cstdio>

namespace hvdrun::launcher {

GenerationLog::GenerationLog(Clock::time_point started, std::size_t size) {
  begin(started, size);
}

void GenerationLog::begin(Clock::time_point started, std::size_t size) {
  generations_.push_back({started, {}, {}, size, {}});
}

void GenerationLog::formed(Clock::time_point at) {
  if (!current().formed) current().formed = at;
}

void GenerationLog::end(Clock::time_point at, const std::string& reason) {
  if (current().ended) return;
  current().ended = at;
  current().end_reason = reason;
}

void GenerationLog::end_reason_if_none(const std::string& reason) {
  if (current().end_reason.empty()) current().end_reason = reason;
}

std::string GenerationLog::describe() const {
  if (generations_.size() < 2) return {};
  const Clock::time_point launched = this->launched();
  const auto at = [&](Clock::time_point t) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", std::chrono::duration<double>(t - launched).count());
    return std::string(text);
  };
  const auto ranks = [](std::size_t n) {
    return std::to_string(n) + (n == 1 ? " rank" : " ranks");
  };
  std::string text = "generations:";
  for (std::size_t g = 0; g < generations_.size(); ++g) {
    const auto& record = generations_[g];
    text += "\n    " + std::to_string(g) + ": " + ranks(record.size) + ", started " +
            at(record.started) + (record.formed ? ", formed " + at(*record.formed) : "") +
            (record.ended ? ", ended " + at(*record.ended) : "") + ": " +
            (record.end_reason.empty() ? "running when the job ended" : record.end_reason);
  }
  return text;
}

}  // namespace hvdrun::launcher
