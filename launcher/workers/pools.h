// Pools: what the job needs of the pools that run its workers and the hosts they run on
// (WorkerPools is the real one: this machine's processes and the SSH hosts' agents). What the
// pools report goes to the job through PoolEvents. io thread only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/process_end.h"
#include "launcher/agent/agent_protocol.h"
#include "launcher/plan/rendezvous_addr.h"
#include "launcher/plan/worker_id.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/spec/job_spec.h"
#include "launcher/workers/worker_env.h"
#include "launcher/workers/worker_pool.h"

namespace hvdrun::launcher {

class PoolEvents {
 public:
  virtual void host_ready(std::size_t host, remote::HostReady ready) = 0;
  virtual void host_failed(std::size_t host, const remote::HostFailed& failed) = 0;
  virtual void worker_exited(const WorkerId& id, ProcessEnd end) = 0;
  virtual void stream_closed(const WorkerId& id) = 0;
  // A remote worker's stacks (request_remote_stacks()).
  virtual void remote_stacks(const WorkerId& id, agent::StacksFrame stacks) = 0;

 protected:
  ~PoolEvents() = default;
};

class Pools {
 public:
  virtual ~Pools() = default;

  // The addresses of the job and what every worker is given.
  virtual void set_addresses(const AddressPlan& plan, const RendezvousInfo& rendezvous) = 0;
  virtual RendezvousInfo& rendezvous() noexcept = 0;
  // Connects to `remote` (indices into the job's hosts), all at once.
  virtual void connect(const std::vector<std::size_t>& remote) = 0;
  // What became of a host found by the discovery script.
  enum class Discovered {
    kUsable,            // this machine, listed once: its slots can be used now
    kConnecting,        // remote: usable once host_ready() came
    kThisMachineAgain,  // this machine under another name, already a host of the job: not used
    kLoopbackOnly,      // remote, but the job's rendezvous listens on loopback: not used
  };
  // A host found by the discovery script (index: the job's next host): connects to it if it
  // is remote and the job's rendezvous can be reached from other hosts.
  virtual Discovered add_discovered(std::size_t index, const HostSpec& host) = 0;
  // The remote host connected: its workers can start.
  virtual void host_connected(std::size_t host, remote::HostReady ready) = 0;
  virtual bool connected(std::size_t host) const = 0;
  virtual std::size_t connected_count() const = 0;
  // Whether `address` is a connected remote host's, as hvdrun connected to it.
  virtual bool is_host_address(const std::string& address) const = 0;
  virtual const std::string& host_name(std::size_t host) const = 0;
  // hvdrun's stdin is a file (it reaches only a rank 0 on this machine).
  virtual bool stdin_is_file() const = 0;

  // Addresses for the workers of `host`, rank 0 running on `rank0_host`.
  virtual RendezvousInfo rendezvous_for(std::size_t host, std::size_t rank0_host) const = 0;
  // Starts the workers in their hosts' pools.
  virtual void start(std::vector<WorkerLaunch> launches) = 0;
  virtual void signal_all(int signo) = 0;
  virtual void signal(const WorkerId& id, int signo) = 0;
  // Whether output of `id` may still come, whichever pool ran it; the streams still open.
  virtual bool streams_open(const WorkerId& id) const = 0;
  virtual std::size_t open_streams() const = 0;
  virtual std::size_t open_remote_streams() const = 0;
  // Stops waiting for streams: every pool's, or the local or remote ones only.
  virtual void close_streams() = 0;
  virtual void close_local_streams() = 0;
  virtual void close_remote_streams() = 0;
  // The job is over: nothing a worker left behind survives, no exit is collected any more.
  virtual void close() = 0;
  // This machine's workers that have not ended, with their pids.
  virtual std::vector<std::pair<WorkerId, pid_t>> local_pids() const = 0;
  // Has every remote host's agent collect its running workers' stacks; the workers whose
  // stacks may come (PoolEvents::remote_stacks).
  virtual std::vector<WorkerId> request_remote_stacks() = 0;
  // The job is over with `status`; `again`: another run follows (a per-node start's agents
  // connect again).
  virtual void end_job(int status, bool again) = 0;
};

}  // namespace hvdrun::launcher
