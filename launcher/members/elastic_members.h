// ElasticMembers: the membership of an elastic job (membership.h). Its members' bookkeeping
// is an ElasticMembership (where workers live, cooldowns, free slots, the next generation's
// ranks); around it, what changes the members: a failed worker's host cooling down and the
// survivors re-forming with replacements and promoted spares, the wait below --min-np (up to
// --elastic-timeout), growth when a cooldown ends, hosts the discovery script adds or removes
// (polled here), hosts that failed their preflight check joining in cooldown, a straggler's
// host leaving, and elastic Horovod's rank 0 told of host changes; the warm spares (SparePool).
// A part of the job (job.h). io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/discovery/discovery_poller.h"
#include "launcher/horovod/updates/host_updates.h"
#include "launcher/job/job_parts.h"
#include "launcher/job/membership.h"
#include "launcher/members/spare_pool.h"
#include "launcher/plan/elastic_membership.h"
#include "launcher/process/watchdog.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

class ElasticMembers final : public Membership {
 public:
  using Clock = std::chrono::steady_clock;

  // `slots`: the first generation's (their keys are their ranks).
  ElasticMembers(boost::asio::io_context& io, const JobParts& parts, const std::vector<Slot>& slots,
                 Watchdog& watchdog, LocalHosts& local_hosts);

  Spares& spares() noexcept override { return spares_; }
  void describe(JobFacts& facts) const override;
  void started() override;
  void worker_ended(const WorkerRecord& record) override;
  std::string restarting_after(const WorkerRecord& failed) override;
  void start_next_generation(const std::string& reason) override;
  void reform(const WorkerId* ended, rdzv::Handover how, const std::string& reason) override;
  void notify_rank_zero(SlotsChange change, const std::string& reason) override;
  bool straggler_found(std::uint32_t key, const std::string& verdict) override;
  bool stacks_before_losing() const override { return false; }
  bool takes_hosts_later() const override { return true; }
  void host_joined(std::size_t host) override;
  bool host_failed_later(std::size_t host, const std::string& why) override;
  bool start_without_host(std::size_t host, const std::string& why) override;
  void horovod_registered(const std::string& name,
                          horovod::WorkerRegistration registration) override;
  bool reform_asked(std::size_t waiting) override;
  void stop() override;
  void running() override { elastic_timer_.cancel(); }

 private:
  // At the next cooldown end: grow back towards --max-np (or end a wait for slots), start the
  // spares that are short.
  void watch_cooldowns();
  // The worker leaves the members and the job's table (a report of its end is ignored then).
  void drop(const WorkerId& id);
  void drop_and_reform(WorkerId id);  // by value: its record goes
  void reform(rdzv::Handover how, const std::string& reason);
  void wait_for_slots(const std::string& reason);
  void slots_changed(SlotsChange change, const std::string& reason);
  void take_ranks(const std::vector<rdzv::Member>& members);
  std::map<std::string, Slot> named_survivors(const std::vector<rdzv::Member>& members);
  void name_spares(const std::vector<rdzv::Member>& members, const std::set<WorkerId>& promoted,
                   std::map<std::string, Slot>& survivors);
  // "generation 3: 4 workers, 1 of them new (1 a warm spare)"
  void note_generation(rdzv::Handover how, std::size_t size, std::size_t added,
                       std::size_t promoted);
  void on_discovered_hosts(const std::vector<HostSpec>& hosts);
  void take_in(const ElasticMembership::HostsChange& change, const std::vector<HostSpec>& hosts);
  void add_preflight_failed_hosts();
  void cool_after_preflight(std::size_t host);

  JobParts parts_;
  ElasticMembership members_;
  SparePool spares_;                                  // fills its shortfall when a cooldown ends
  std::optional<horovod::HostUpdates> host_updates_;  // survivors re-form: Horovod's rank 0
  std::set<std::string> preflight_cooled_;    // failed preflight, not discovered yet: cool down
  boost::asio::steady_timer elastic_timer_;   // --elastic-timeout while below --min-np
  boost::asio::steady_timer cooldown_timer_;  // the next end of a host's cooldown
  std::optional<DiscoveryPoller> discovery_;  // --host-discovery-script only
};

}  // namespace hvdrun::launcher
