// SpareLedger: the bookkeeping of a job's warm spares (--spares), apart from their records
// (the job's WorkerTable of spares): when each started, how many started, were promoted (which
// ones, after how long a wait), ended while they waited or were not needed at the end; whether
// the job dismissed them; and when so many ended in a row that no more are started. Pure.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "launcher/plan/worker_id.h"

namespace hvdrun::launcher {

class SpareLedger {
 public:
  using Clock = std::chrono::steady_clock;
  // Spares that end while they wait, one after the other, before none is started any more.
  static constexpr int kDeathsInARow = 3;

  void started(const WorkerId& id, Clock::time_point at);
  // The spare became a worker (a promotion ends a run of deaths): "spare 4 (host h1, waiting
  // 2999.1 ms)" for the summary, the wait counted to `now`.
  void promoted(const WorkerId& id, std::uint32_t key, const std::string& host,
                Clock::time_point now);
  // Its end was expected (removed, dismissed, the job ending): not counted.
  void gone(const WorkerId& id) { started_at_.erase(id); }
  // It ended while it waited: true when that makes kDeathsInARow in a row (no more start).
  bool ended_while_waiting(const WorkerId& id);
  // The job ends: true the first time (the spares are told then, each one counted).
  bool dismiss();
  void not_needed() { ++dismissed_; }
  // The first start fell short of --spares: true once, to say so once.
  bool first_shortfall(std::size_t added);

  bool dismissed() const noexcept { return dismissed_all_; }
  bool given_up() const noexcept { return given_up_; }
  int deaths_in_a_row() const noexcept { return deaths_in_a_row_; }
  // "spares: 2 started, 1 promoted (spare 4 (host h1, waiting 3 s)), 0 ended while they
  // waited, 1 not needed at the end"; empty when none started.
  std::string describe() const;

 private:
  std::map<WorkerId, Clock::time_point> started_at_;  // the spares still waiting
  std::size_t started_ = 0, promoted_ = 0, ended_ = 0, dismissed_ = 0;
  std::vector<std::string> promotions_;
  bool dismissed_all_ = false;
  bool short_said_ = false;
  int deaths_in_a_row_ = 0;
  bool given_up_ = false;
};

}  // namespace hvdrun::launcher
