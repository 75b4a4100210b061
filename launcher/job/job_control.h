// JobControl: what a component (job_events.h) may ask of the job it watches. Narrow on
// purpose: what a request changes goes through the job's policy, as any event of the job's
// own does. io thread only.
#pragma once

#include <cstdint>
#include <string>

namespace hvdrun::launcher {

class JobControl {
 public:
  // The current generation runs: its workers started and none was told to stop.
  virtual bool generation_running() const = 0;
  // The rendezvous generation of the running workers.
  virtual std::uint32_t generation() const = 0;
  // Worker `key` is persistently the slowest (`verdict` says how): the policy decides whether
  // its host leaves the job; true if it did (the others re-form without it).
  virtual bool straggler_found(std::uint32_t key, const std::string& verdict) = 0;

 protected:
  ~JobControl() = default;
};

}  // namespace hvdrun::launcher
