// The four policies (policy.h). Each is unit-tested on its decisions without processes.
#pragma once

#include <optional>
#include <string>

#include "launcher/policy/policy.h"

namespace hvdrun::launcher {

// Static jobs: a worker that exits non-zero, dies by a signal or cannot be started fails the
// job; one that exits 0 early is finished and the others go on.
class FailFastPolicy final : public Policy {
 public:
  Action worker_ended(const WorkerEnded& ended, const JobFacts& facts) override;
};

// --max-restarts N: the first failure of a generation restarts every worker while fewer than
// N restarts were made; after that, fail-fast. In an elastic job (`min_np` given) a change of
// slots restarts every worker too (not counted), and a host unusable at the start is left out
// while --min-np workers remain.
class RestartAllPolicy final : public Policy {
 public:
  explicit RestartAllPolicy(int max_restarts, std::optional<int> min_np = std::nullopt)
      : max_restarts_(max_restarts), min_np_(min_np) {}
  Action worker_ended(const WorkerEnded& ended, const JobFacts& facts) override;
  Action host_unusable_at_start(std::size_t remaining) const override;
  Action slots_changed(SlotsChange change, const std::string& reason,
                       const JobFacts& facts) override;
  std::string exhausted() const override;
  int survived() const override { return restarts_; }
  int restart_count(std::size_t /*generations*/) const override { return restarts_; }
  int restarts() const noexcept { return restarts_; }

 private:
  int max_restarts_;
  std::optional<int> min_np_;
  int restarts_ = 0;
};

// Elastic jobs (--min-np/--max-np): a failed worker is dropped and the survivors re-form, up
// to --reset-limit times (none: no limit); one that exits 0 is finished. A change of slots
// re-forms the survivors: at their next commit, or at once while they wait for slots. The end
// of the training is the end: once every worker that took part in it has exited 0, the job
// succeeds, and newcomers still waiting to join them, or a wait for slots, are not needed.
class ElasticPolicy : public Policy {
 public:
  ElasticPolicy(std::optional<int> reset_limit, int min_np)
      : reset_limit_(reset_limit), min_np_(min_np) {}
  Action worker_ended(const WorkerEnded& ended, const JobFacts& facts) override;
  Action host_unusable_at_start(std::size_t remaining) const override;
  Action slots_changed(SlotsChange change, const std::string& reason,
                       const JobFacts& facts) override;
  Action straggler_found(const StragglerFound& found, const JobFacts& facts) override;
  std::string exhausted() const override;
  int survived() const override { return resets_; }
  int resets() const noexcept { return resets_; }

 protected:
  // One more re-formation after a failure, if --reset-limit allows it.
  bool take_reset() noexcept {
    if (reset_limit_ && resets_ >= *reset_limit_) return false;
    ++resets_;
    return true;
  }

 private:
  std::optional<int> reset_limit_;
  int min_np_;
  int resets_ = 0;
  bool straggler_kept_said_ = false;  // a straggler that stays is said once
};

// Elastic jobs of Horovod workers (hvd.elastic.run): as ElasticPolicy until a worker uses
// Horovod's rendezvous; from then on a change of slots is sent to rank 0 (its workers raise
// HostsUpdatedInterrupt at their next commit and ask for their places), the workers re-form
// once they all asked, and a removed slot's worker that dies first re-forms them at once. A
// re-formation they ask for after a failed collective counts against --reset-limit.
class HorovodElasticPolicy final : public ElasticPolicy {
 public:
  using ElasticPolicy::ElasticPolicy;
  Action worker_ended(const WorkerEnded& ended, const JobFacts& facts) override;
  Action slots_changed(SlotsChange change, const std::string& reason,
                       const JobFacts& facts) override;
  Action reform_asked(std::size_t waiting, const JobFacts& facts) override;
  std::string horovod_in_use(const std::string& peer) override;
  bool in_use() const noexcept { return in_use_; }

 private:
  bool in_use_ = false;
};

}  // namespace hvdrun::launcher
