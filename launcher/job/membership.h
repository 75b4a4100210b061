// Membership: who takes part in the job's next generation, and how the job's hosts and slots
// change under it. The job core asks it, never the job's kind: a static job's membership keeps
// the same slots (a restart starts them again as new incarnations, with fresh keys); an
// elastic job's (elastic_members.h) re-forms its survivors with replacements, grows after
// cooldowns and discovered hosts, and tells elastic Horovod's rank 0 of host changes. It owns
// the job's warm spares (spares.h). Made for the job by run/ (members/make_membership.h); a part
// of the job (job.h). io thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/horovod/updates/worker_registration.h"
#include "launcher/job/spares.h"
#include "launcher/job/worker_table.h"
#include "launcher/policy/policy.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {

class Membership {
 public:
  virtual ~Membership() = default;

  // The job's warm spares (a static job's: none).
  virtual Spares& spares() noexcept = 0;
  // What the policy is told of the members (JobFacts::live, the host update pending).
  virtual void describe(JobFacts& facts) const = 0;

  // The first generation's workers have started: discovery's first poll, the hosts that failed
  // their preflight check added in cooldown.
  virtual void started() = 0;
  // A worker of the generation ended (the job took its end in).
  virtual void worker_ended(const WorkerRecord& record) = 0;
  // A restart for `failed`'s end: a note on its host if the membership keeps it out a while
  // (" ; host h unused for 10 s"), else empty.
  virtual std::string restarting_after(const WorkerRecord& failed) = 0;
  // Every worker of a restarted generation has ended: the next one starts.
  virtual void start_next_generation(const std::string& reason) = 0;
  // A re-formation the policy chose: without `ended` (the worker whose end it answers; null:
  // none) for `reason`.
  virtual void reform(const WorkerId* ended, rdzv::Handover how, const std::string& reason) = 0;
  // Tells the Horovod workers' rank 0 of a change of hosts (Action::kNotifyRankZero).
  virtual void notify_rank_zero(SlotsChange change, const std::string& reason) = 0;
  // A persistent straggler (worker `key`): the policy decides whether its host leaves the job;
  // true if it did.
  virtual bool straggler_found(std::uint32_t key, const std::string& verdict) = 0;
  // A worker of the job missed its heartbeats: whether the ranks' stacks are collected before
  // it is killed (a static job, which that failure ends).
  virtual bool stacks_before_losing() const = 0;

  // Hosts: whether a remote host may connect after the job started; one that did (its slots
  // are usable now); one that failed then (true: the job goes on without it); one that cannot
  // be used at the start (true: the job starts without its slots).
  virtual bool takes_hosts_later() const = 0;
  virtual void host_joined(std::size_t host) = 0;
  virtual bool host_failed_later(std::size_t host, const std::string& why) = 0;
  virtual bool start_without_host(std::size_t host, const std::string& why) = 0;

  // Elastic Horovod: a worker registered its notification service; workers asked to re-form.
  virtual void horovod_registered(const std::string& name,
                                  horovod::WorkerRegistration registration) = 0;
  virtual bool reform_asked(std::size_t waiting) = 0;

  // The job stops changing (a restart or its end): no timer of the membership's is left.
  virtual void stop() = 0;
  // A generation runs: a wait for slots is over.
  virtual void running() = 0;
};

}  // namespace hvdrun::launcher
