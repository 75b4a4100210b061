// JobRendezvous: what the rendezvous faces tell the job (RendezvousEvents): the rendezvous
// failed (the start timeout among them: the ranks' stacks first), every rank joined, a worker
// or spare missed its heartbeats (killed; in a static job, which that ends, after the ranks'
// stacks), and what elastic Horovod's workers ask (to re-form, a registration, a spare's
// query) or do (the first PUT, a connection the gate admits only from the job's hosts). What
// it changes goes through the job's lifecycle (JobCore), its policy and its membership. A part
// of the job (job.h). io thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "launcher/job/generation_log.h"
#include "launcher/job/job_core.h"
#include "launcher/job/job_requests.h"
#include "launcher/job/membership.h"
#include "launcher/job/worker_table.h"
#include "launcher/policy/policy.h"
#include "launcher/servers/rendezvous_faces.h"
#include "launcher/spec/job_spec.h"
#include "launcher/workers/pools.h"

namespace hvdrun::launcher {

class JobRendezvous final : public RendezvousEvents {
 public:
  // What it works with: the job's, made before or after this (the faces, built before the
  // job's other parts, report here), and used only once the job's io_context runs.
  struct Parts {
    const JobSpec& spec;
    JobCore& core;
    PoolEvents& pool_events;  // a lost worker's end, when its host cannot report it
    const std::unique_ptr<Pools>& pools;
    const std::unique_ptr<Policy>& policy;
    const std::unique_ptr<Membership>& membership;
    WorkerTable& workers;
    GenerationLog& generations;
    JobRequests& requests;  // the ranks' stacks
  };
  explicit JobRendezvous(Parts parts) : parts_(parts) {}

  void rendezvous_failed(const rdzv::JobError& error) override;
  void all_joined() override;
  void worker_lost(std::uint32_t key, const std::string& why) override;
  void horovod_in_use(const std::string& peer) override;
  bool horovod_reform_asked(std::size_t waiting) override;
  bool is_job_host(const std::string& address) const override {
    return parts_.pools->is_host_address(address);
  }
  void spare_parked(std::uint32_t key) override { parts_.membership->spares().parked(key); }
  void horovod_registered(const std::string& name,
                          horovod::WorkerRegistration registration) override {
    parts_.membership->horovod_registered(name, std::move(registration));
  }

 private:
  // The lost worker is killed, unless it ended meanwhile (then its own end is its failure).
  void kill_lost(std::uint32_t key, const std::string& why);

  Parts parts_;
};

}  // namespace hvdrun::launcher
