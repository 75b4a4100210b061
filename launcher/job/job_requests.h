// JobRequests: what the job's components and parts ask of it (job_control.h): whether its
// generation runs and how its members progress, the end past a limit and the straggler's
// exclusion (both through the policy, by the job's lifecycle and membership), the job ended
// for a cause, the ranks' stacks (it owns the job's StackDumps: this machine's ranks by their
// pids, the remote ones from their agents), the stalled ranks suspected, a happening told to
// every component. A part of the job (job.h). io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <memory>

#include "launcher/job/job_control.h"
#include "launcher/job/job_core.h"
#include "launcher/job/job_publisher.h"
#include "launcher/job/membership.h"
#include "launcher/job/worker_table.h"
#include "launcher/policy/policy.h"
#include "launcher/servers/rendezvous_faces.h"
#include "launcher/stacks/stack_dumps.h"
#include "launcher/workers/pools.h"

namespace hvdrun::launcher {

class JobRequests final : public JobControl {
 public:
  // Every reference is the job's and outlives this; `membership` is made after this (it asks
  // this too) and asked only once the job runs. The ranks' stack files go to `stacks_dir`.
  JobRequests(boost::asio::io_context& io, const std::filesystem::path& stacks_dir,
              RendezvousFaces& faces, Pools& pools, const WorkerTable& workers,
              JobPublisher& publisher, Policy& policy, JobCore& core,
              const std::unique_ptr<Membership>& membership);

  bool generation_running() const override { return core_.lifecycle().is(JobState::kRunning); }
  std::uint32_t generation() const override { return faces_.generation(); }
  std::vector<rdzv::MemberProgress> progress() const override { return faces_.progress(); }
  bool straggler_found(std::uint32_t key, const std::string& verdict) override {
    return membership_->straggler_found(key, verdict);
  }
  void limit_reached(Limit limit, const std::string& reason) override {
    core_.carry_out(policy_.limit_reached(limit, reason, core_.facts()));
  }
  bool end_job(const std::string& why) override;
  void collect_stacks(const std::string& why, const std::vector<int>& culprits,
                      std::function<void()> then) override;
  void suspect(std::optional<std::vector<int>> ranks) override { dumps_.suspect(std::move(ranks)); }
  void happened(const std::string& what, const Args& args) override {
    publisher_.publish(&JobEvents::happened, what, args);
  }

  // A remote worker's stacks, from its host's agent: its rank's file, and the collection goes
  // on.
  void remote_stacks(const WorkerId& id, agent::StacksFrame frame);
  StackDumps& dumps() noexcept { return dumps_; }

 private:
  RendezvousFaces& faces_;
  Pools& pools_;
  const WorkerTable& workers_;
  JobPublisher& publisher_;
  Policy& policy_;
  JobCore& core_;
  const std::unique_ptr<Membership>& membership_;
  StackDumps dumps_;  // the ranks' stacks, on demand
};

}  // namespace hvdrun::launcher
