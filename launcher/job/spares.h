// Spares: the warm spares of a job whose members re-form (--spares): workers started beyond
// the generation, parked in their join until a re-formation promotes them. The job core
// routes a spare's events here and waits for them at its end; its Membership owns them (an
// elastic job's SparePool, members/spare_pool.h; a static job has none). io thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/process_end.h"
#include "launcher/job/worker_table.h"
#include "launcher/plan/worker_id.h"

namespace hvdrun::launcher {

class Spares {
 public:
  virtual ~Spares() = default;

  // The spares running, in no generation (rank -1).
  virtual const WorkerTable& table() const noexcept = 0;
  std::size_t running() const noexcept { return table().running(); }
  bool is_spare(const WorkerId& id) const { return table().find(id) != nullptr; }

  // Starts spares on free slots until --spares wait (none once the job winds down).
  virtual void refill() = 0;
  // A spare's process ended (false: `id` is no spare): while the job runs, another starts.
  virtual bool exited(const WorkerId& id, ProcessEnd end) = 0;
  // A spare missed its heartbeats (false: `key` is no spare): killed; its end replaces it.
  virtual bool lost(std::uint32_t key, const std::string& why) = 0;
  // The spare of `key` waits for a place (its join is held): said once.
  virtual void parked(std::uint32_t key) = 0;
  // Horovod spares whose queries stopped (their heartbeats) are lost: killed and replaced.
  virtual void check_horovod() = 0;
  // The job ends: every spare is told it is not needed.
  virtual void dismiss() = 0;
  // "spares: 2 started, 1 promoted ..." for the summary; empty when none started.
  virtual std::string describe() const = 0;
};

}  // namespace hvdrun::launcher
