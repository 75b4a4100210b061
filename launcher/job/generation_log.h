// GenerationLog: the generations of a job, in order, for the summary: when each started,
// formed (every rank joined) and ended, its size and why it ended. The last one is the
// current one. io thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace hvdrun::launcher {

class GenerationLog {
 public:
  using Clock = std::chrono::steady_clock;
  struct Generation {
    Clock::time_point started;
    std::optional<Clock::time_point> formed;
    std::optional<Clock::time_point> ended;
    std::size_t size = 0;
    std::string end_reason;
  };

  // The first generation, of `size` workers.
  GenerationLog(Clock::time_point started, std::size_t size);

  // A new current generation.
  void begin(Clock::time_point started, std::size_t size);
  Generation& current() noexcept { return generations_.back(); }
  const Generation& current() const noexcept { return generations_.back(); }
  // Generations so far, the current one included.
  std::size_t count() const noexcept { return generations_.size(); }
  // The current generation's number (0 for the first).
  std::size_t number() const noexcept { return generations_.size() - 1; }
  // When the job launched: its first generation's start.
  Clock::time_point launched() const noexcept { return generations_.front().started; }

  // Every rank of the current generation joined (the first time only counts).
  void formed(Clock::time_point at);
  // The current generation ends at `at` for `reason`, unless it has already ended.
  void end(Clock::time_point at, const std::string& reason);
  // Says why the current generation ended, if nothing said it yet.
  void end_reason_if_none(const std::string& reason);

  // "generations:" and a line per generation, times from the launch; empty when the job had
  // only one.
  std::string describe() const;

 private:
  std::vector<Generation> generations_;
};

}  // namespace hvdrun::launcher
