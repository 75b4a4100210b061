// SparePool: an elastic job's warm spares (--spares): workers of the job's program started on
// free slots beyond --max-np, parked in their join (libhvdrun's init(), HVDRUN_SPARE=1) in no
// generation. A re-formation takes them (ElasticMembership::fill) before it starts new
// workers, so a failed worker's place is filled without a cold start; a spare that dies is
// replaced (after a few in a row, no more are started); when the job ends they are told they
// are not needed. Owns the spares' records and their ledger (the summary's line). A part of
// the job (job.h). io thread only.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "launcher/job/job_parts.h"
#include "launcher/job/spare_ledger.h"
#include "launcher/job/worker_table.h"
#include "launcher/plan/elastic_membership.h"

namespace hvdrun::launcher {

class SparePool {
 public:
  // `parts` are the job's (they outlive this); `membership`: the elastic job's members (null
  // in a job that does not re-form: it has no spares). `short_of_slots`: fewer spares wait
  // than --spares (a host's cooldown may end that).
  SparePool(const JobParts& parts, ElasticMembership* membership,
            std::function<void()> short_of_slots)
      : parts_(parts), membership_(membership), short_of_slots_(std::move(short_of_slots)) {}

  const WorkerTable& table() const noexcept { return table_; }
  std::size_t running() const noexcept { return table_.running(); }
  bool is_spare(const WorkerId& id) const { return table_.find(id) != nullptr; }

  // Starts spares on free slots until --spares wait (none once the job winds down).
  void refill();
  // The spare promoted by the next generation becomes one of its workers (a newcomer).
  void promote(const WorkerId& id);
  // A spare's process ended (false: `id` is no spare): while the job runs, another starts.
  bool exited(const WorkerId& id, ProcessEnd end);
  // A spare missed its heartbeats (false: `key` is no spare): killed; its end replaces it.
  bool lost(std::uint32_t key, const std::string& why);
  // The spare of `key` waits for a place (its join is held): told to the components, and
  // said with --verbose, once.
  void parked(std::uint32_t key);
  // The spares of a host that was lost go with it: dismissed, killed, never promoted.
  void drop_host(std::size_t host);
  // The discovery script no longer lists its slot: told to go; its end is expected.
  void slot_removed(std::uint32_t key);
  // Horovod spares whose queries stopped (their heartbeats) are lost: killed and replaced.
  void check_horovod();
  // The job ends: every spare is told it is not needed (its init() throws NotMemberError).
  void dismiss();
  // "spares: 2 started, 1 promoted ..." for the summary; empty when none started.
  std::string describe() const { return ledger_.describe(); }

 private:
  void ended(WorkerRecord& spare);

  JobParts parts_;
  ElasticMembership* membership_;
  std::function<void()> short_of_slots_;
  WorkerTable table_;               // running, in no generation (rank -1)
  SpareLedger ledger_;              // their starts, promotions and ends, for the summary
  std::set<std::uint32_t> parked_;  // said to wait
};

}  // namespace hvdrun::launcher
