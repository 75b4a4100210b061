// run_job (run_job.h): what the job starts from, computed once, then the job core on one
// io_context, then its summary and its last output.
#include "launcher/run/run_job.h"

#include <signal.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <iostream>
#include <optional>

#include "hvdrun/error.h"
#include "launcher/discovery/initial_hosts.h"
#include "launcher/job/job.h"
#include "launcher/members/make_membership.h"
#include "launcher/output/logging.h"
#include "launcher/plan/open_files.h"
#include "launcher/plan/placement.h"
#include "launcher/plan/run_plan.h"
#include "launcher/run/dry_run.h"
#include "launcher/run/job_components.h"
#include "launcher/run/loop_probe.h"
#include "launcher/run/preflight_run.h"
#include "launcher/run/time_limit.h"
#include "launcher/servers/server_setup.h"
#include "launcher/slurm/moved_control.h"
#include "launcher/slurm/slurm_relocation.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/local_aliases.h"
#include "launcher/spec/local_host.h"
#include "rendezvous/auth.h"
#include "rendezvous/client.h"

namespace hvdrun::launcher {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// How long hvdrun may still take, after the signal that ended the job, to write its output;
// the last kNoteTime of it is for the line that says what was not written.
constexpr auto kInterruptedOutputWait = std::chrono::milliseconds(2000);
constexpr auto kNoteTime = std::chrono::milliseconds(200);

// Waits until the console has written every queued line: as long as its readers take it, or
// until kInterruptedOutputWait after the signal that ended the job (`interrupted_at`); a SIGINT,
// SIGTERM or SIGHUP meanwhile gives up. What is left then is said on stderr, if stderr still
// takes it.
void finish_output(asio::io_context& io, Console& console,
                   std::optional<Clock::time_point> interrupted_at) {
  io.restart();
  bool stop = false;
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&stop](const boost::system::error_code& ec, int) { stop = !ec; });
  std::optional<std::chrono::milliseconds> limit;
  if (interrupted_at) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *interrupted_at + kInterruptedOutputWait - kNoteTime - Clock::now());
    limit = std::max(left, std::chrono::milliseconds(0));
  }
  if (console.drain(limit, [&] {
        io.poll();
        return stop;
      })) {
    return;
  }
  const auto left = console.queued(StreamKind::kStdout);
  if (left > 0 && !console.paused(StreamKind::kStderr)) {
    note(std::to_string(left) + " bytes of output were not written: nothing reads hvdrun's stdout");
    console.drain(kNoteTime, nullptr);
  }
}

// An elastic job starts every slot its hosts give, up to --max-np (as horovodrun does); -np is
// the least it starts with.
int elastic_start_size(const JobSpec& spec, const std::vector<HostSpec>& hosts) {
  return std::max(spec.num_proc, std::min(total_slots(hosts), *spec.elastic.max_np));
}

// The run's plan before its preflight: the hosts the discovery script gives (an elastic job
// starts on them), else the request's; this machine's aliases merged.
RunPlan first_plan(const JobSpec& spec, Watchdog& watchdog,
                   const std::map<std::string, std::string>& environment, LocalHosts& local) {
  RunPlan plan = plan_as_asked(spec);
  const auto is_local = [&](const std::string& name) { return local.contains(name); };
  if (!spec.elastic.discovery_script.empty()) {
    plan.hosts = initial_hosts(spec, watchdog, environment);
    plan.alias_note = merge_local_aliases(plan.hosts, plan.hosts.size(), is_local);
  } else {
    // The hosts that may get ranks: -np of them, or --max-np in an elastic job.
    const int most = std::max(spec.num_proc, spec.elastic.max_np.value_or(0));
    plan.alias_note = merge_local_aliases(plan.hosts, hosts_used(plan.hosts, most), is_local);
  }
  if (!plan.alias_note.empty()) note(plan.alias_note);
  if (spec.elastic_job()) plan.num_proc = elastic_start_size(spec, plan.hosts);
  return plan;
}

// What the job starts from: the placement, the remote hosts, the addresses, both servers'
// settings.
JobStart job_start(const JobSpec& spec, const RunPlan& run, LocalHosts& local_hosts) {
  const auto start = Clock::now();
  std::vector<Slot> slots = place(run.hosts, run.num_proc);
  auto remote = remote_hosts(run.hosts, slots,
                             [&](const std::string& name) { return local_hosts.contains(name); });
  // Hosts that start in cooldown after their preflight join later: remote ones need the
  // rendezvous reachable from other hosts, as the hosts placed now do.
  const bool remote_later =
      std::any_of(run.preflight_cooled.begin(), run.preflight_cooled.end(),
                  [&](const HostSpec& host) { return !local_hosts.contains(host.name); });
  const auto plan = plan_addresses(spec, !remote.empty() || remote_later);
  if (spec.verbose) {
    note("placement: " + plural(slots.size(), "rank") + " on " + plural(run.hosts.size(), "host") +
         " (" + std::to_string(remote.size()) + " remote) in " + millis_since(start));
  }
  rdzv::ServerOptions options;
  options.secret = rdzv::make_secret();
  options.slots = slots;
  options.start_timeout = spec.start_timeout;
  options.bind_address = plan.bind;
  const WorkerCount workers = count_workers(
      slots, remote,
      static_cast<std::size_t>(spec.elastic.max_np.value_or(0) + spec.elastic.spares));
  options.max_unauthenticated = rendezvous_max_unauthenticated(workers, open_file_limit());
  if (spec.elastic_job()) options.reform_timeout = spec.elastic.timeout;
  if (spec.elastic_job() || spec.elastic.heartbeat_timeout) {
    options.heartbeat_interval = rdzv::kDefaultHeartbeat;
    options.heartbeat_timeout = spec.elastic.heartbeat_timeout.value_or(kDefaultHeartbeatTimeout);
  }
  // Horovod's clients send no credentials: where hvdrun's own rendezvous listens (plan.bind:
  // loopback for a local job unless --network-interface or --rendezvous-addr says otherwise).
  auto kv_options = horovod_server_options(plan.bind, workers, open_file_limit());
  if (spec.survivors_reform()) {
    kv_options.rank_query_hold = rank_query_hold(spec.elastic.timeout);
    kv_options.spare_query_hold = rdzv::kDefaultHeartbeat;  // the spares' heartbeat interval
  }
  return JobStart{spec,
                  run,
                  std::move(slots),
                  std::move(remote),
                  plan,
                  std::move(options),
                  std::move(kv_options),
                  make_run_id(),
                  local_hosts,
                  {},
                  {},
                  {}};
}

}  // namespace

int run_job(const JobSpec& spec, const std::map<std::string, std::string>& environment) {
  setup_logging(spec.log_level);
  if (spec.command.empty()) throw UsageError("no program to run was spec");
  Watchdog watchdog = Watchdog::start();  // before anything could start a thread
  LocalHosts local_hosts;                 // names of this machine, looked up once for the job
  if (spec.launcher == JobSpec::Launcher::kNodes) {  // node-1 ...: names for agents, not hosts
    for (std::size_t i = 1; i < spec.hosts.size(); ++i) {
      local_hosts.add_remote(spec.hosts[i].name);
    }
  }
  if (must_move_to_allocation(spec, environment, local_hosts)) {
    watchdog.disarm();
    return run_moved_to_allocation(spec, environment);
  }
  RunPlan plan = first_plan(spec, watchdog, environment, local_hosts);
  if (spec.preflight.run && !spec.dry_run) {  // --dry-run starts nothing, probes included
    auto checked = preflight_then(spec, plan, environment, watchdog, local_hosts);
    if (!checked.plan) {
      watchdog.disarm();
      return checked.status;
    }
    plan = std::move(*checked.plan);
  }
  const int status = run_once(spec, plan, environment, watchdog, local_hosts);
  watchdog.disarm();
  return status;
}

int run_once(const JobSpec& spec, const RunPlan& plan,
             const std::map<std::string, std::string>& environment, Watchdog& watchdog,
             LocalHosts& local_hosts, RunHooks* hooks) {
  JobStart start = job_start(spec, plan, local_hosts);
  if (spec.dry_run) {
    watchdog.disarm();
    return print_dry_run(spec, start, environment, std::cout);
  }
  asio::io_context io(1);
  Console console(io);
  LogRoute log_route(console, spec.log_level);
  std::optional<NoteHold> quiet;  // after the route, gone before it
  if (hooks && hooks->quiet && !spec.verbose) quiet.emplace();
  OutputOptions output{spec.elastic.max_np.value_or(plan.num_proc),
                       spec.prefix_timestamp,
                       spec.output_dir,
                       10,
                       spec.output_prefix,
                       spec.ranks_filter};
  if (hooks) {
    output.capture_prefix = hooks->capture_prefix;
    output.capture = hooks->capture;
  }
  OutputSink sink(std::move(output), console);
  const auto servers_start = Clock::now();
  const std::string bind = start.plan.bind;
  const std::vector<Slot> slots = start.slots;
  start.components = job_components(spec, plan, Clock::now());
  const TimeLimit* time_limit = nullptr;  // the job owns it
  if (hooks && hooks->limit) {
    auto limit = std::make_unique<TimeLimit>(io, *hooks->limit, hooks->limit_why);
    time_limit = limit.get();
    start.components.push_back(std::move(limit));
  }
  start.membership = [&](const JobParts& parts) {
    return make_membership(io, parts, slots, watchdog, local_hosts);
  };
  Job job(io, std::move(start), watchdog, sink, environment);
  if (spec.verbose) {
    note("rendezvous server up on " + bind + ":" + std::to_string(job.rendezvous_port()) +
         ", Horovod's on port " + std::to_string(job.horovod_port()) + ", in " +
         millis_since(servers_start));
  }
  if (!hooks) note_omp_default(spec, slots, environment);  // said once, by the job itself
  job.launch();
  // Signals from the hvdrun that moved here, once the job's handlers are in (gone before them).
  const ControlLink moved_from(environment);
  std::optional<LoopProbe> probe;  // how long a handler holds the loop, for --verbose
  if (spec.verbose) probe.emplace(io);
  io.run();
  if (probe) {
    probe->stop();
    note("event loop: " + probe->summary());
  }
  if (!hooks) job.print_summary();  // a run with hooks is the caller's to report
  finish_output(io, console, job.interrupted_at());
  // Known only now: the console may meet a write error while it drains (its thread writes).
  if (const std::string line = job.incomplete_output(); !line.empty()) {
    note(line);
    console.drain(kNoteTime, nullptr);
  }
  if (hooks) {
    hooks->unusable_hosts = job.unusable_hosts();
    hooks->interrupted = job.interrupted_at().has_value();
    hooks->timed_out = time_limit != nullptr && time_limit->ran_out();
  }
  return job.exit_status();
}

}  // namespace hvdrun::launcher
