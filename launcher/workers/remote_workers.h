// The workers on other hosts: one RemoteSpawner (ssh/remote_spawn.h) per job, its events
// posted from the host threads onto the io_context, their output cut into lines and written
// through the same OutputSink as local output, their ends reported as ProcessEnds, all keyed by
// WorkerId (the SSH layer routes by a number this class gives each worker). Reads JobSpec:
// ssh_port, ssh_identity_file, ssh_host_key_check, remote_hvdrun, start_timeout, verbose.
// Lifetime: owned by WorkerPools, used on the io thread only; close() (or destruction)
// closes every SSH session, and the remote agents then kill their workers. A host whose agent
// was lost gets a new one (a new link: SSH session, srun step, or the node's next agent) the
// next time workers start there; its readiness is not reported again.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/process_end.h"
#include "launcher/output/output.h"
#include "launcher/plan/placement.h"
#include "launcher/plan/worker_id.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/spec/job_spec.h"
#include "launcher/workers/worker_pool.h"

namespace hvdrun::launcher {

class RemoteWorkers final : public WorkerPool {
 public:
  // Host indices here are indices into JobSpec::hosts.
  struct Callbacks {
    std::function<void(std::size_t host, remote::HostReady ready)> on_host_ready;
    std::function<void(std::size_t host, remote::HostFailed failed)> on_host_failed;
    std::function<void(const WorkerId& worker, ProcessEnd end)> on_exit;
    // Its output is complete (at its end, or later when it ended with output still unread).
    std::function<void(const WorkerId& worker)> on_stream_closed;
    // Its stacks, as its host's agent collected them (request_stacks()).
    std::function<void(const WorkerId& worker, agent::StacksFrame stacks)> on_stacks;
  };

  // What agents that connect to the launcher (--launcher slurm) need: the job's secret, the
  // address to listen on, and the address they connect to (empty: the route to the first host).
  struct Agents {
    std::string secret;
    std::string bind;
    std::string connect_address;
  };

  // Connects to `hosts` (each with its index in the job's hosts) at once, in parallel: over
  // SSH, or (JobSpec::launcher kSlurm) through agents that one srun step starts.
  RemoteWorkers(boost::asio::io_context& io, OutputSink& sink, const JobSpec& spec,
                const std::vector<std::pair<std::size_t, HostSpec>>& hosts,
                const std::map<std::string, std::string>& environment, const Agents& agents,
                Callbacks callbacks);
  // Connects to one more host (found by an elastic job's discovery); its on_host_ready or
  // on_host_failed follows.
  void add_host(std::size_t index, const HostSpec& host);
  ~RemoteWorkers();
  RemoteWorkers(const RemoteWorkers&) = delete;
  RemoteWorkers& operator=(const RemoteWorkers&) = delete;

  // Starts workers (WorkerId::host: a host after its on_host_ready) with JobSpec::command in
  // hvdrun's working directory; their environment goes through
  // remote::remote_worker_environment(). May be called again for more.
  void start(std::vector<WorkerLaunch> launches) override;
  // Has each host's agent signal its workers.
  void signal_all(int signo) override;
  void signal(const WorkerId& worker, int signo) override;
  // Has each host's agent collect its running workers' stacks (on_stacks, one per worker);
  // returns the workers whose stacks may come.
  std::vector<WorkerId> request_stacks();
  // The job is over with `status`: agents started on their own (per-node starts) exit with it,
  // srun's with 0, or, with `again`, they connect again for this hvdrun's next run (the job
  // after its preflight).
  void end_job(int status, bool again);
  // Closes every session now (joins the host threads); the agents kill what is left there.
  void close() override;
  // A worker's output is one stream here: its channel. Only the streams of workers whose end
  // was reported while their output still came count: one the job ended itself (its
  // host missed its heartbeats) has no end reported here and is not waited for.
  bool streams_open(const WorkerId& worker) const override;
  std::size_t open_streams() const override;
  // Stops waiting for the output of ended workers: what their channels still bring is dropped.
  void close_streams() override;

 private:
  struct Running {
    WorkerId id;
    std::size_t host = 0;  // JobSpec::hosts index
    std::size_t link = 0;  // the spawner's link it started on
    bool ended = false;    // its end was reported; its output is still coming
  };
  struct HostStart {
    std::size_t workers = 0;
    std::size_t started = 0;
    std::chrono::steady_clock::time_point since;
  };
  remote::RemoteEvents posting_events();
  void on_output(int number, StreamKind stream, const std::string& bytes);
  void on_started(int number);
  void on_exit(int number, const ProcessEnd& exit, bool output_open);
  void on_output_closed(int number);
  // Writes the partial last lines and forgets the worker.
  void finish_output(std::map<int, Running>::iterator it);
  void start_on(std::size_t host, std::vector<WorkerLaunch> workers);

  boost::asio::io_context& io_;
  OutputSink& sink_;
  const JobSpec& spec_;
  std::vector<std::size_t> hosts_;              // spawner (link) index -> the job's host index
  std::map<std::size_t, std::size_t> link_of_;  // the job's host index -> its current link
  std::set<std::size_t> lost_;        // job hosts whose agent was lost: a new link when used
  std::set<std::size_t> reconnects_;  // links made for a lost agent, until ready or failed
  std::map<std::size_t, std::string> names_;  // the job's host index -> its name
  Callbacks callbacks_;
  std::vector<std::string> keep_;   // -x names: kept in the remote environment
  std::string cwd_;                 // the workers' working directory: hvdrun's
  std::map<int, Running> running_;  // by the SSH layer's number
  int next_number_ = 0;
  std::map<std::size_t, HostStart> starting_;  // JobSpec::hosts index -> progress
  bool closed_ = false;
  std::unique_ptr<remote::HostSpawner> spawner_;  // last: its events use the members above
};

// The SSH client options of a job: the environment's (HOME, USER, SSH_AUTH_SOCK) with -p, -i
// and --ssh-host-key-check applied.
ssh::SshOptions job_ssh_options(const JobSpec& spec,
                                const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
