// SparePool: an elastic job's warm spares (--spares): workers of the job's program started on
// free slots beyond --max-np, parked in their join (libhvdrun's init(), HVDRUN_SPARE=1) in no
// generation. A re-formation takes them (ElasticMembership::fill) before it starts new
// workers, so a failed worker's place is filled without a cold start; a spare that dies is
// replaced (after a few in a row, no more are started); when the job ends they are told they
// are not needed. Owns the spares' records and their ledger (the summary's line). The job's
// Spares (job/spares.h), owned by its ElasticMembers. io thread only.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "launcher/job/job_parts.h"
#include "launcher/job/spares.h"
#include "launcher/job/worker_table.h"
#include "launcher/members/spare_ledger.h"
#include "launcher/plan/elastic_membership.h"

namespace hvdrun::launcher {

class SparePool final : public Spares {
 public:
  // `parts` are the job's (they outlive this); `membership`: the elastic job's members (they
  // outlive this). `short_of_slots`: fewer spares wait than --spares (a host's cooldown may end
  // that).
  SparePool(const JobParts& parts, ElasticMembership& membership,
            std::function<void()> short_of_slots)
      : parts_(parts), membership_(membership), short_of_slots_(std::move(short_of_slots)) {}

  const WorkerTable& table() const noexcept override { return table_; }
  void refill() override;
  // The spare promoted by the next generation becomes one of its workers (a newcomer).
  void promote(const WorkerId& id);
  bool exited(const WorkerId& id, ProcessEnd end) override;
  bool lost(std::uint32_t key, const std::string& why) override;
  // Told to the components, and said with --verbose, once.
  void parked(std::uint32_t key) override;
  // The spares of a host that was lost go with it: dismissed, killed, never promoted.
  void drop_host(std::size_t host);
  // The discovery script no longer lists its slot: told to go; its end is expected.
  void slot_removed(std::uint32_t key);
  void check_horovod() override;
  // Its init() throws NotMemberError.
  void dismiss() override;
  std::string describe() const override { return ledger_.describe(); }

 private:
  void ended(WorkerRecord& spare);

  JobParts parts_;
  ElasticMembership& membership_;
  std::function<void()> short_of_slots_;
  WorkerTable table_;               // running, in no generation (rank -1)
  SpareLedger ledger_;              // their starts, promotions and ends, for the summary
  std::set<std::uint32_t> parked_;  // said to wait
};

}  // namespace hvdrun::launcher
