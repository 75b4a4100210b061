// hvdrun's command line -> JobSpec. The words before the program are scanned here (argparse
// rules: long-option prefixes, -np/-hostfile/-prefix-timestamp, `--`), normalised to
// --name=value and parsed by Boost.Program_options. Reads HOROVOD_START_TIMEOUT,
// HVDRUN_LOG_LEVEL and the -x NAME variables from the given environment.
#include "launcher/cli/cli.h"

#include <boost/program_options.hpp>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

#include "hvdrun/error.h"
#include "launcher/cli/check_build.h"
#include "launcher/cli/cli_options.h"
#include "launcher/cli/cli_parsed.h"
#include "launcher/cli/cli_scan.h"
#include "launcher/cli/cli_values.h"
#include "launcher/cli/config_file.h"
#include "launcher/cli/horovod_tuning.h"
#include "launcher/process/signal_watch.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {
namespace {

po::options_description describe_options() {
  po::options_description description;
  for (const auto& option : cli_options()) {
    const std::string name(option.name);
    if (option.value_name.empty()) {
      description.add_options()(name.c_str(), po::bool_switch());
    } else if (option.repeatable) {
      description.add_options()(name.c_str(), po::value<std::vector<std::string>>());
    } else {
      description.add_options()(name.c_str(), po::value<std::string>());
    }
  }
  return description;
}

// --min-np and the other elastic flags; HOROVOD_ELASTIC_TIMEOUT as horovodrun reads it (in
// elastic jobs only: a static job runs whatever it says).
template <class EnvFn>
void apply_elastic_settings(JobSpec& spec, const Parsed& parsed, const EnvFn& env) {
  auto count = [&](const char* name, int min) -> std::optional<int> {
    const auto v = parsed.value(name);
    if (!v) return std::nullopt;
    return parse_count(parsed.spelled(name), *v, kMaxSlots, "the number", min);
  };
  spec.elastic.min_np = count("min-np", 1);
  spec.elastic.max_np = count("max-np", 1);
  spec.elastic.reset_limit = count("reset-limit", 0);
  spec.elastic.slots_per_host = count("slots-per-host", 1);
  spec.elastic.discovery_script = parsed.value("host-discovery-script").value_or("");
  if (const auto v = parsed.value("elastic-timeout")) {
    spec.elastic.timeout = std::chrono::seconds(
        parse_count(parsed.spelled("elastic-timeout"), *v, kMaxStartTimeout, "the timeout", 1));
  } else if (const auto from_env = spec.elastic_job() ? env("HOROVOD_ELASTIC_TIMEOUT")
                                                      : std::nullopt) {  // as horovodrun
    spec.elastic.timeout = std::chrono::seconds(
        parse_count("HOROVOD_ELASTIC_TIMEOUT", *from_env, kMaxStartTimeout, "the timeout", 1));
  }
  for (const auto& [flag, value] :
       {std::pair{"discovery-interval", &spec.elastic.discovery_interval},
        std::pair{"discovery-timeout", &spec.elastic.discovery_timeout}}) {
    const auto v = parsed.value(flag);
    if (!v) continue;
    *value = parse_grace(parsed.spelled(flag), *v);
    if (*value < std::chrono::milliseconds(10)) {
      throw UsageError(parsed.spelled(flag) + " " + *v + ": must be at least 0.01 seconds");
    }
  }
  spec.elastic.exclude_stragglers = parsed.flag("exclude-stragglers");
  if (const auto v = parsed.value("spares")) {
    spec.elastic.spares = parse_count(parsed.spelled("spares"), *v, 4096, "the spares", 0);
  }
  if (const auto v = parsed.value("straggler-margin")) {
    spec.elastic.straggler_margin = std::chrono::milliseconds(
        parse_count(parsed.spelled("straggler-margin"), *v, 3'600'000, "the margin", 1));
  }
  if (const auto v = parsed.value("unresponsive-timeout")) {
    spec.elastic.heartbeat_timeout = parse_grace(parsed.spelled("unresponsive-timeout"), *v);
    if (*spec.elastic.heartbeat_timeout < std::chrono::seconds(1)) {
      throw UsageError(parsed.spelled("unresponsive-timeout") + " " + *v +
                       ": must be at least 1 second (heartbeats go every 0.5 s)");
    }
  }
  if (const auto v = parsed.value("blacklist-cooldown-range")) {
    const auto space = v->find(' ');
    const std::string name = parsed.spelled("blacklist-cooldown-range");
    const int low = parse_count(name, v->substr(0, space), 3600, "MIN", 0);  // 0: none
    const int high = parse_count(name, v->substr(space + 1), 3600, "MAX", 0);
    if (high < low) {
      throw UsageError(name + " " + *v + ": MAX (" + std::to_string(high) + ") is below MIN (" +
                       std::to_string(low) + ")");
    }
    spec.elastic.cooldown_min = std::chrono::seconds(low);
    spec.elastic.cooldown_max = std::chrono::seconds(high);
  }
}

void apply_settings(JobSpec& spec, const Parsed& parsed,
                    const std::map<std::string, std::string>& environment) {
  const auto env = [&](const std::string& name) -> std::optional<std::string> {
    const auto it = environment.find(name);
    if (it == environment.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  if (const auto v = parsed.value("start-timeout")) {
    spec.start_timeout = std::chrono::seconds(
        parse_count(parsed.spelled("start-timeout"), *v, kMaxStartTimeout, "the timeout"));
  } else if (const auto from_env = env("HOROVOD_START_TIMEOUT")) {
    spec.start_timeout = std::chrono::seconds(
        parse_count("HOROVOD_START_TIMEOUT", *from_env, kMaxStartTimeout, "the timeout"));
  }
  if (const auto v = parsed.value("grace-period")) {
    spec.grace_period = parse_grace(parsed.spelled("grace-period"), *v);
  }
  if (const auto v = parsed.value("stall-timeout")) {
    spec.stall_timeout = parse_grace(parsed.spelled("stall-timeout"), *v);
  }
  if (const auto v = parsed.value("stall-shutdown")) {
    spec.stall_shutdown = parse_grace(parsed.spelled("stall-shutdown"), *v);
    if (*spec.stall_shutdown < std::chrono::seconds(1)) {
      throw UsageError(parsed.spelled("stall-shutdown") + " " + *v + ": must be at least 1 second");
    }
  }
  if (const auto v = parsed.value("straggler-report")) {
    spec.straggler_report = parse_grace(parsed.spelled("straggler-report"), *v);
  }
  if (const auto v = parsed.value("forward-signals")) {
    spec.forward_signals = parse_forwarded_signals(parsed.spelled("forward-signals"), *v);
  }
  if (const auto v = parsed.value("max-restarts")) {
    spec.max_restarts =
        parse_count(parsed.spelled("max-restarts"), *v, kMaxRestarts, "the number of restarts", 0);
  }
  apply_elastic_settings(spec, parsed, env);
  if (const auto v = parsed.value("log-level")) {
    spec.log_level = parse_log_level(parsed.spelled("log-level"), *v);
  } else if (const auto from_env = env("HVDRUN_LOG_LEVEL")) {
    spec.log_level = parse_log_level("HVDRUN_LOG_LEVEL", *from_env);
  }
  spec.output_dir = parsed.value("output-filename");
  spec.prefix_timestamp = parsed.flag("prefix-output-with-timestamp");
  if (const auto v = parsed.value("line-prefix")) {
    spec.output_prefix = parse_output_prefix(parsed.spelled("line-prefix"), *v);
  }
  if (const auto v = parsed.value("ranks-filter")) {
    spec.ranks_filter = parse_rank_ranges(parsed.spelled("ranks-filter"), *v);
  }
  spec.verbose = parsed.flag("verbose");
  spec.dry_run = parsed.flag("dry-run");
  spec.preflight.only = parsed.flag("preflight-only");
  spec.preflight.run = spec.preflight.only || parsed.flag("preflight");
  spec.preflight.exclude = parsed.flag("preflight-exclude");
  if (const auto v = parsed.value("preflight-timeout")) {
    spec.preflight.timeout = std::chrono::seconds(
        parse_count(parsed.spelled("preflight-timeout"), *v, 3600, "the timeout", 1));
  }
  if (const auto v = parsed.value("preflight-slack")) {
    spec.preflight.slack =
        parse_count(parsed.spelled("preflight-slack"), *v, 99, "the percentage", 0) / 100.0;
  }
  for (const char* flag : {"preflight-exclude", "preflight-timeout", "preflight-slack"}) {
    if (parsed.given(flag) && !spec.preflight.run) {
      throw UsageError(parsed.spelled(flag) + " needs --preflight or --preflight-only");
    }
  }
  spec.timeline = parsed.value("timeline");
  if (const auto v = parsed.value("timeline-max-events")) {
    spec.timeline_max_events = static_cast<std::size_t>(
        parse_count(parsed.spelled("timeline-max-events"), *v, 100'000'000, "the count", 10));
  }
  spec.timeline_collectives = parsed.flag("timeline-collectives");
  if (const auto v = parsed.value("timeline-rank-events")) {
    spec.timeline_rank_events = static_cast<std::size_t>(
        parse_count(parsed.spelled("timeline-rank-events"), *v, 100'000'000, "the count", 1));
  }
  if ((spec.timeline_collectives || parsed.value("timeline-rank-events")) && !spec.timeline) {
    throw UsageError(std::string(parsed.value("timeline-rank-events")
                                     ? parsed.spelled("timeline-rank-events")
                                     : "--timeline-collectives") +
                     " draws into the timeline: give --timeline FILE too");
  }
  for (const auto& v : parsed.values("network-interface")) {
    add_interfaces(spec.network_interfaces, parsed.spelled("network-interface"), v);
  }
  if (const auto v = parsed.value("network-interfaces")) {
    add_interfaces(spec.network_interfaces, parsed.spelled("network-interfaces"), *v);
  }
  if (const auto v = parsed.value("ssh-port")) {
    spec.ssh_port = parse_count(parsed.spelled("ssh-port"), *v, 65535, "the port");
  }
  spec.ssh_identity_file = parsed.value("ssh-identity-file").value_or("");
  if (const auto v = parsed.value("ssh-host-key-check")) {
    spec.ssh_host_key_check = parse_host_key_check(parsed.spelled("ssh-host-key-check"), *v);
  }
  if (const auto v = parsed.value("rendezvous-addr")) {
    spec.rendezvous_addr = parse_rendezvous_addr(parsed.spelled("rendezvous-addr"), *v);
  }
  spec.remote_hvdrun = parsed.value("remote-hvdrun").value_or("");
  for (const auto& v : parsed.values("x"))
    spec.env_forward.push_back(parse_env_forward(v, environment));
}

// horovodrun's tuning flags, over its --config-file, become
// spec.tuning_env. A tuning variable also given with -x: the flag is an error (two values on
// one command line), the config file's value gives way to -x.
void apply_horovod_settings(JobSpec& spec, const Parsed& parsed, std::vector<std::string>& notes) {
  std::vector<TuningSetting> settings;
  std::optional<std::string> file_level;
  if (const auto path = parsed.value("config-file")) {
    auto file = load_config_file(*path, parsed.given("gloo"));
    settings = std::move(file.settings);
    file_level = file.log_level;
    notes.insert(notes.end(), file.notes.begin(), file.notes.end());
  }
  for (const auto& param : tuning_params()) {
    const std::string name(param.option.name);
    if (!parsed.given(name)) continue;
    for (const auto* other : opposite_switches(param)) {
      if (parsed.given(std::string(other->option.name))) {
        throw UsageError(parsed.spelled(name) + " and --" + std::string(other->option.name) +
                         " cannot be used together");
      }
    }
    const auto value = param.kind == TuningKind::kSwitch ? std::string() : *parsed.value(name);
    settings.push_back({&param, value, parsed.spelled(name), true});
  }
  auto env = tuning_environment(settings);
  // --log-level is hvdrun's own level too: an -x HOROVOD_LOG_LEVEL may differ from it.
  if (parsed.given("log-level")) {
    env["HOROVOD_LOG_LEVEL"] = {horovod_log_level(spec.log_level), parsed.spelled("log-level")};
  } else if (file_level) {
    spec.log_level = *file_level;
    env["HOROVOD_LOG_LEVEL"] = {horovod_log_level(*file_level), *parsed.value("config-file")};
  }
  for (const auto& forward : spec.env_forward) {
    const auto it = env.find(forward.name);
    if (it == env.end()) continue;
    if (it->second.from_flag) {
      throw UsageError("-x " + forward.name + " and " + it->second.origin + " both set " +
                       forward.name + "; give one");
    }
    env.erase(it);  // the config file's value gives way to -x
  }
  for (auto& [name, value] : env) spec.tuning_env.emplace(name, std::move(value.value));
}

}  // namespace

CliResult parse_cli(std::span<const std::string> args,
                    const std::map<std::string, std::string>& environment) {
  auto scanned = scan(args);
  Parsed parsed;
  parsed.spelling = std::move(scanned.spelling);
  try {
    const auto description = describe_options();
    const auto style =
        po::command_line_style::allow_long | po::command_line_style::long_allow_adjacent;
    po::store(po::command_line_parser(scanned.tokens).options(description).style(style).run(),
              parsed.vm);
    po::notify(parsed.vm);
  } catch (const po::error& e) {
    throw UsageError(see_help(e.what()));
  }
  CliResult result;
  if (parsed.flag("help")) {
    result.action = CliAction::kHelp;
    result.text = help_text();
    return result;
  }
  if (parsed.flag("version")) {
    result.action = CliAction::kVersion;
    result.text = std::string("hvdrun ") + HVDRUN_VERSION + "\n";
    return result;
  }
  if (parsed.flag("check-build")) {
    result.action = CliAction::kCheckBuild;
    const JobSignalsUnblocked unblocked;  // it runs programs for seconds: Ctrl-C ends it
    result.text = check_build_text(environment);
    return result;
  }
  apply_settings(result.spec, parsed, environment);
  apply_horovod_settings(result.spec, parsed, result.notes);
  if (scanned.command.empty()) throw UsageError("no program given: " + std::string(kUsage));
  result.spec.command = std::move(scanned.command);
  result.spec.launcher_args.assign(args.begin(), args.end());
  apply_hosts(result.spec, parsed, result.notes, environment);
  return result;
}

}  // namespace hvdrun::launcher
