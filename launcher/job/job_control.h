// JobControl: what a component (job_events.h) may ask of the job it watches. Narrow on
// purpose: what a request changes goes through the job's policy, as any event of the job's
// own does. io thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/policy/policy.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {

class JobControl {
 public:
  using Args = std::vector<std::pair<std::string, std::string>>;

  // The current generation runs: its workers started and none was told to stop.
  virtual bool generation_running() const = 0;
  // The rendezvous generation of the running workers.
  virtual std::uint32_t generation() const = 0;
  // What the members of the running generation last said of their collectives.
  virtual std::vector<rdzv::MemberProgress> progress() const = 0;
  // Worker `key` is persistently the slowest (`verdict` says how): the policy decides whether
  // its host leaves the job; true if it did (the others re-form without it).
  virtual bool straggler_found(std::uint32_t key, const std::string& verdict) = 0;
  // A limit of the job's own ran out: the policy decides (it ends the job, for `reason`).
  virtual void limit_reached(Limit limit, const std::string& reason) = 0;
  // Ends a job still under way as failed for `why`, its ranks terminated as after a failure;
  // false (nothing done) when it is ending already: its outcome stays.
  virtual bool end_job(const std::string& why) = 0;
  // The running ranks' stacks, for `why`, the top frames of `culprits` said (every rank's if
  // none); `then` once they came or the wait ended (stack_dumps.h).
  virtual void collect_stacks(const std::string& why, const std::vector<int>& culprits,
                              std::function<void()> then) = 0;
  // The ranks a stall waits on now (none: no stall): a Ctrl-\ shows theirs, a Ctrl-C collects
  // theirs before the ranks stop.
  virtual void suspect(std::optional<std::vector<int>> ranks) = 0;
  // Something a component saw, by name, told to every component (JobEvents::happened).
  virtual void happened(const std::string& what, const Args& args) = 0;

 protected:
  ~JobControl() = default;
};

}  // namespace hvdrun::launcher
