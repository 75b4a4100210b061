// WorkerPools: every pool that runs the job's workers, and the hosts they run on: this
// machine's workers (LocalWorkers, with rank 0's stdin) and, once there is a remote host, the
// SSH hosts' (RemoteWorkers). Knows which remote hosts are connected and from which address,
// and so which addresses each host's workers are given (rendezvous_addr.h has the rule). What
// the pools report (a host connected or failed, a worker's end, an output stream closed) goes
// to the job through PoolEvents. io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/interfaces.h"
#include "common/process_end.h"
#include "launcher/plan/rendezvous_addr.h"
#include "launcher/plan/worker_id.h"
#include "launcher/process/watchdog.h"
#include "launcher/spec/local_host.h"
#include "launcher/workers/local_workers.h"
#include "launcher/workers/pools.h"
#include "launcher/workers/rank_zero_stdin.h"
#include "launcher/workers/remote_workers.h"
#include "launcher/workers/worker_env.h"

namespace hvdrun::launcher {

class WorkerPools final : public Pools {
 public:
  // `events`, `watchdog`, `sink`, `spec` and `environment` outlive this.
  // `hosts`: the job's at the start (discovered ones are added).
  WorkerPools(boost::asio::io_context& io, const JobSpec& spec, std::vector<HostSpec> hosts,
              Watchdog& watchdog, OutputSink& sink,
              const std::map<std::string, std::string>& environment, LocalHosts& local_hosts,
              PoolEvents& events);
  WorkerPools(const WorkerPools&) = delete;
  WorkerPools& operator=(const WorkerPools&) = delete;

  // The addresses of the job and what every worker is given; reads this machine's interfaces.
  void set_addresses(const AddressPlan& plan, const RendezvousInfo& rendezvous) override;
  RendezvousInfo& rendezvous() noexcept override { return rdzv_; }
  const AddressPlan& plan() const noexcept { return plan_; }
  // Connects to `remote` (indices into `hosts`, the job's hosts), all at once.
  void connect(const std::vector<std::size_t>& remote) override;
  // A host found by the discovery script (index: the job's next host): connects to it if it
  // is remote and the job's rendezvous can be reached from other hosts.
  Discovered add_discovered(std::size_t index, const HostSpec& host) override;
  // The remote host connected: its workers can start.
  void host_connected(std::size_t host, remote::HostReady ready) override;
  bool connected(std::size_t host) const override { return ready_.contains(host); }
  std::size_t connected_count() const override { return ready_.size(); }
  // Whether `address` is a connected remote host's, as hvdrun connected to it.
  bool is_host_address(const std::string& address) const override {
    return host_addresses_.contains(address);
  }
  const std::vector<HostSpec>& hosts() const noexcept { return hosts_; }
  const std::string& host_name(std::size_t host) const override { return hosts_.at(host).name; }

  // Addresses for the workers of `host`, rank 0 running on `rank0_host`.
  RendezvousInfo rendezvous_for(std::size_t host, std::size_t rank0_host) const override;
  // Starts the workers in their hosts' pools: the remote ones first (their SSH round trips
  // overlap the local fork/exec).
  void start(std::vector<WorkerLaunch> launches) override;
  void signal_all(int signo) override;
  void signal(const WorkerId& id, int signo) override;
  // Whether output of `id` may still come, whichever pool ran it; the streams still open.
  bool streams_open(const WorkerId& id) const override;
  std::size_t open_streams() const override;
  std::size_t open_local_streams() const { return local_.open_streams(); }
  std::size_t open_remote_streams() const override { return remote_ ? remote_->open_streams() : 0; }
  // Stops waiting for streams: every pool's, or the local or remote ones only.
  void close_streams() override;
  void close_local_streams() override;
  void close_remote_streams() override;
  // The job is over: nothing a worker left behind survives, no exit is collected any more
  // and SIGCHLD has its default disposition again.
  void close() override;
  // This machine's workers that have not ended, with their pids.
  std::vector<std::pair<WorkerId, pid_t>> local_pids() const override {
    return local_.running_pids();
  }
  // Has every remote host's agent collect its running workers' stacks; the workers whose
  // stacks may come (PoolEvents::remote_stacks).
  std::vector<WorkerId> request_remote_stacks() override {
    return remote_ ? remote_->request_stacks() : std::vector<WorkerId>{};
  }
  // The job is over with `status` (RemoteWorkers::end_job).
  void end_job(int status, bool again) override {
    if (remote_) remote_->end_job(status, again);
  }
  bool stdin_is_file() const override { return rank_zero_stdin_.is_file(); }

 private:
  WorkerPool& pool_of(std::size_t host) {
    if (ready_.contains(host)) return *remote_;
    return local_;
  }
  std::vector<WorkerPool*> pools();
  std::vector<const WorkerPool*> pools() const;
  RemoteWorkers::Callbacks remote_callbacks();
  // This machine's workers' exits, collected at each SIGCHLD until close().
  void watch_children();

  boost::asio::io_context& io_;
  const JobSpec& spec_;
  OutputSink& sink_;
  const std::map<std::string, std::string>& environment_;
  LocalHosts& local_hosts_;
  PoolEvents& events_;
  std::vector<HostSpec> hosts_;  // the job's hosts by index: spec's, then discovered ones
  AddressPlan plan_;
  RendezvousInfo rdzv_;                             // port, secret, master port; addresses per host
  std::map<std::size_t, remote::HostReady> ready_;  // remote hosts connected so far
  std::set<std::string> host_addresses_;            // their remote_addr
  std::vector<InterfaceAddress> interfaces_;        // this machine's, read once
  std::optional<std::size_t> local_host_;           // the host that is this machine, once known
  RankZeroStdin rank_zero_stdin_;
  LocalWorkers local_;
  boost::asio::signal_set children_;  // SIGCHLD
  bool closed_ = false;
  std::unique_ptr<RemoteWorkers> remote_;  // last: its events use the members above
};

}  // namespace hvdrun::launcher
