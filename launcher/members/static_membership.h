// StaticMembership: the membership of a job whose slots never change (membership.h): every
// generation has the same slots; a restart starts them again as new incarnations with fresh
// keys. Its policy never re-forms and never takes a host in later; it has no spares. A part of
// the job (job.h). io thread only.
#pragma once

#include <cstdint>

#include "launcher/job/job_parts.h"
#include "launcher/job/membership.h"

namespace hvdrun::launcher {

// A static job's spares: none ever starts.
class NoSpares final : public Spares {
 public:
  const WorkerTable& table() const noexcept override { return none_; }
  void refill() override {}
  bool exited(const WorkerId& /*id*/, ProcessEnd /*end*/) override { return false; }
  bool lost(std::uint32_t /*key*/, const std::string& /*why*/) override { return false; }
  void parked(std::uint32_t /*key*/) override {}
  void check_horovod() override {}
  void dismiss() override {}
  std::string describe() const override { return {}; }

 private:
  WorkerTable none_;
};

class StaticMembership final : public Membership {
 public:
  // `next_key`: HVDRUN_SLOT of the next worker started (the first generation's are taken).
  StaticMembership(const JobParts& parts, std::uint32_t next_key)
      : parts_(parts), next_key_(next_key) {}

  Spares& spares() noexcept override { return spares_; }
  void describe(JobFacts& facts) const override { facts.live = parts_.workers.running(); }
  void started() override {}
  void worker_ended(const WorkerRecord& /*record*/) override {}
  std::string restarting_after(const WorkerRecord& /*failed*/) override { return {}; }
  void start_next_generation(const std::string& reason) override;
  // Never asked by a static job's policy: if it were, the job fails, saying so.
  void reform(const WorkerId* ended, rdzv::Handover how, const std::string& reason) override;
  void notify_rank_zero(SlotsChange /*change*/, const std::string& /*reason*/) override {}
  bool straggler_found(std::uint32_t /*key*/, const std::string& /*verdict*/) override {
    return false;
  }
  // The lost worker's failure ends the job: where every rank is, first.
  bool stacks_before_losing() const override { return true; }
  bool takes_hosts_later() const override { return false; }
  void host_joined(std::size_t /*host*/) override {}
  bool host_failed_later(std::size_t /*host*/, const std::string& /*why*/) override {
    return false;
  }
  bool start_without_host(std::size_t /*host*/, const std::string& /*why*/) override {
    return false;
  }
  void horovod_registered(const std::string& /*name*/,
                          horovod::WorkerRegistration /*registration*/) override {}
  bool reform_asked(std::size_t /*waiting*/) override { return false; }
  void stop() override {}
  void running() override {}

 private:
  JobParts parts_;
  std::uint32_t next_key_;
  NoSpares spares_;
};

}  // namespace hvdrun::launcher
