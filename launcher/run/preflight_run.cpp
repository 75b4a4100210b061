// hvdrun --preflight (preflight_run.h).
#include "launcher/run/preflight_run.h"

#include <chrono>
#include <filesystem>

#include "launcher/output/logging.h"
#include "launcher/remote/agent_dismissal.h"
#include "launcher/remote/remote_spawn.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/local_aliases.h"

namespace hvdrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;

std::string probe_program_for(const JobSpec& spec) {
  const std::string hvdrun =
      spec.remote_hvdrun.empty() ? remote::default_agent_path() : spec.remote_hvdrun;
  return (std::filesystem::path(hvdrun).parent_path() / "hvdrun-preflight").string();
}

// The preflight's time is shared: half for the connections (and the probes' start), half for
// the probes' run.
std::chrono::milliseconds run_share(std::chrono::seconds timeout) {
  return std::max(std::chrono::milliseconds(500), std::chrono::milliseconds(timeout) / 2);
}

// The preflight's outcome when no job follows it: a per-node start's agents, which would
// connect again for the job, are told to end with `status`, as they would after a job.
PreflightDecision without_job(const JobSpec& spec, int status) {
  if (spec.launcher == JobSpec::Launcher::kNodes && spec.hosts.size() > 1) {
    std::vector<std::string> nodes;
    for (std::size_t i = 1; i < spec.hosts.size(); ++i) nodes.push_back(spec.hosts[i].name);
    // At least 10 s: an agent refused by the closed port tries again every 0.25 to 0.5 s.
    const auto missing =
        remote::dismiss_agents(spec.per_node.secret, spec.per_node.port, nodes, status,
                               std::max<std::chrono::milliseconds>(
                                   std::chrono::seconds(10), run_share(spec.preflight.timeout)));
    if (!missing.empty()) {
      note("warning: preflight: no word to the node agent of " + some_of(missing) +
           " (it did not connect again): it ends when its --connect-timeout does");
    }
  }
  return PreflightDecision{std::nullopt, status};
}

}  // namespace

ProbeRun probe_run(const JobSpec& spec, const RunPlan& plan, const std::string& probe_program) {
  ProbeRun run{spec, {}};
  JobSpec& probe = run.spec;
  // Every host the job may use: a static job's first -np slots' hosts; with
  // --preflight-exclude, or in an elastic job, every host (the job may take any of them in
  // place of one that failed, so none is used unchecked).
  probe.hosts = plan.hosts;
  if (!spec.preflight.exclude && !spec.elastic_job()) {
    probe.hosts.resize(hosts_used(plan.hosts, plan.num_proc));
  }
  const int total = total_slots(probe.hosts);
  probe.num_proc = total;
  probe.elastic = ElasticSpec{};
  probe.elastic.min_np = 1;  // a host that cannot be used leaves the others going
  probe.elastic.max_np = total;
  probe.elastic.timeout = spec.preflight.timeout;
  probe.elastic.cooldown_min = probe.elastic.cooldown_max = std::chrono::seconds(3600);
  probe.max_restarts = 0;
  // The probes' run has what the connections leave of the preflight's time: they take half.
  const auto timeout_ms = run_share(spec.preflight.timeout).count();
  probe.command = {probe_program, "--program", spec.command.at(0), "--timeout-ms",
                   std::to_string(timeout_ms)};
  probe.start_timeout =
      std::max(std::chrono::seconds(1),
               std::chrono::duration_cast<std::chrono::seconds>(run_share(spec.preflight.timeout)));
  probe.timeline.reset();
  probe.timeline_collectives = false;
  probe.output_dir.reset();
  probe.ranks_filter.clear();
  probe.dry_run = false;
  probe.preflight = PreflightSpec{};
  run.plan = plan_as_asked(probe);
  run.plan.alias_note = plan.alias_note;
  // A per-node start's agents serve the job after the probes: they connect again.
  run.plan.another_run = spec.launcher == JobSpec::Launcher::kNodes;
  return run;
}

std::optional<RunPlan> plan_after_preflight(const JobSpec& spec, const RunPlan& plan,
                                            const PreflightVerdict& verdict, std::string& error) {
  const auto failed = verdict.failed();
  if (failed.empty()) return plan;
  const PreflightRow* first = nullptr;
  for (const auto& row : verdict.rows) {
    if (!row.passed()) {
      first = &row;
      break;
    }
  }
  const std::string culprit =
      "host " + first->host + " failed its preflight check (" + first->failure + ")" +
      (failed.size() > 1 ? "; so did " + some_of({failed.begin() + 1, failed.end()}) : "");
  if (!spec.elastic_job() && !spec.preflight.exclude) {
    error = culprit + "; no worker was started (--preflight-exclude runs on the hosts that passed)";
    return std::nullopt;
  }
  RunPlan job = plan;
  std::erase_if(job.hosts, [&](const HostSpec& h) {
    return std::find(failed.begin(), failed.end(), h.name) != failed.end();
  });
  const int slots = total_slots(job.hosts);
  const int needed = spec.elastic_job() ? *spec.elastic.min_np : plan.num_proc;
  if (slots < needed) {
    error = culprit + "; the hosts that passed give " + std::to_string(slots) + " slots, " +
            (spec.elastic_job() ? "below --min-np " : "fewer than -np ") + std::to_string(needed);
    return std::nullopt;
  }
  job.num_proc = std::min(job.num_proc, slots);
  return job;
}

PreflightDecision preflight_then(const JobSpec& spec, const RunPlan& plan,
                                 const std::map<std::string, std::string>& environment,
                                 Watchdog& watchdog, LocalHosts& local_hosts) {
  const auto start = Clock::now();
  std::vector<preflight::Report> reports;
  RunHooks hooks;
  hooks.capture_prefix = std::string(preflight::kReportMarker);
  hooks.capture = [&reports](std::string_view line) {
    reports.push_back(preflight::read_report(line));
  };
  hooks.quiet = true;  // the table says what the probes found; --verbose shows their run
  hooks.limit = run_share(spec.preflight.timeout);
  hooks.limit_why = "preflight: the probes ran past their half of --preflight-timeout " +
                    std::to_string(spec.preflight.timeout.count()) + " s";
  const std::string probe = probe_program_for(spec);
  std::error_code ec;
  if (spec.remote_hvdrun.empty() && !std::filesystem::is_regular_file(probe, ec)) {
    note("error: preflight: its probe " + probe +
         " is not there: hvdrun-preflight is installed beside hvdrun (reinstall hvdrun)");
    return without_job(spec, 1);
  }
  const ProbeRun probes = probe_run(spec, plan, probe);
  const int probes_status =
      run_once(probes.spec, probes.plan, environment, watchdog, local_hosts, &hooks);
  if (hooks.interrupted) {  // Ctrl-C, SIGTERM: no verdict, no job
    note("preflight interrupted: no job was started");
    return PreflightDecision{std::nullopt, probes_status};
  }
  std::vector<PreflightHost> hosts;
  for (const auto& h : probes.plan.hosts) {
    PreflightHost host{h.name, h.slots, {}};
    for (const auto& [name, why] : hooks.unusable_hosts) {
      if (name == h.name) host.unreachable = why;
    }
    hosts.push_back(std::move(host));
  }
  if (hooks.timed_out) {
    note("preflight: the checks ran past their half of --preflight-timeout " +
         std::to_string(spec.preflight.timeout.count()) +
         " s: the probes still running were stopped");
  }
  PreflightVerdict verdict = decide_preflight(hosts, reports, spec.preflight.slack);
  for (auto& row : verdict.rows) {  // a probe that hangs is stopped at the limit
    if (hooks.timed_out && row.failure.starts_with("no report from")) {
      row.failure += " (the checks ran past --preflight-timeout)";
    }
  }
  note("preflight of " + plural(hosts.size(), "host") + " in " + millis_since(start) + ":");
  for (const auto& line : preflight_table(verdict, spec.preflight.slack)) note(line);
  if (spec.preflight.only) return without_job(spec, verdict.failed().empty() ? 0 : 1);
  std::string error;
  PreflightDecision decision;
  decision.plan = plan_after_preflight(spec, plan, verdict, error);
  if (!decision.plan) {
    note("error: preflight: " + error);
    return without_job(spec, 1);
  }
  if (const auto failed = verdict.failed(); !failed.empty()) {
    // An elastic job takes them in after a cooldown (ElasticMembers::cool_after_preflight).
    if (spec.elastic_job()) {
      for (const auto& host : probes.plan.hosts) {
        if (std::find(failed.begin(), failed.end(), host.name) != failed.end()) {
          decision.plan->preflight_cooled.push_back(host);
        }
      }
      note("preflight: " + plural(failed.size(), "host") + " start" +
           (failed.size() == 1 ? "s" : "") + " in cooldown (" +
           std::to_string(spec.elastic.cooldown_min.count()) +
           " s, --blacklist-cooldown-range): " + some_of(failed));
    } else {
      note("preflight: " + plural(failed.size(), "host") +
           " left out of the job: " + some_of(failed));
    }
  }
  for (const auto& row : verdict.rows) {
    decision.plan->preflight_results.emplace_back(row.host, row.passed() ? "ok" : row.failure);
  }
  decision.plan->preflight_took =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return decision;
}

}  // namespace hvdrun::launcher
