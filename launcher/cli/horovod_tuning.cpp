// horovodrun's tuning flags and their HOROVOD_* variables (horovod_tuning.h).
#include "launcher/cli/horovod_tuning.h"

#include <charconv>
#include <cmath>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {
namespace {

using option_group::kTuning;
using K = TuningKind;

// A tuning flag with a value.
constexpr TuningParam valued(std::string_view name, std::string_view value_name, K kind,
                             std::string_view env, std::string_view help, std::string_view section,
                             std::string_view key, std::string_view requires_env = {}) {
  TuningParam param{};
  param.option.name = name;
  param.option.value_name = value_name;
  param.option.long_form = true;
  param.option.group = kTuning;
  param.option.help = help;
  param.env = env;
  param.kind = kind;
  param.requires_env = requires_env;
  param.yaml_section = section;
  param.yaml_key = key;
  return param;
}

// A switch: `value` is what it writes; `section`/`key` only on the member a true YAML value
// selects.
constexpr TuningParam flag(std::string_view name, std::string_view value, std::string_view env,
                           std::string_view help, std::string_view section = {},
                           std::string_view key = {}, std::string_view requires_env = {}) {
  TuningParam param = valued(name, {}, K::kSwitch, env, help, section, key, requires_env);
  param.switch_value = value;
  return param;
}

constexpr std::string_view kAutotune = "HOROVOD_AUTOTUNE";
constexpr std::string_view kTimeline = "HOROVOD_TIMELINE";

constexpr TuningParam kParams[] = {
    valued("fusion-threshold-mb", "MB", K::kMegabytes, "HOROVOD_FUSION_THRESHOLD",
           "fusion buffer size; 0 disables fusion (Horovod's default: 128)", "params",
           "fusion_threshold_mb"),
    valued("cycle-time-ms", "MS", K::kDecimal, "HOROVOD_CYCLE_TIME",
           "milliseconds between fusion cycles (Horovod's default: 1)", "params", "cycle_time_ms"),
    valued("cache-capacity", "N", K::kWholeNumber, "HOROVOD_CACHE_CAPACITY",
           "response cache entries; 0 disables it (Horovod's default: 1024)", "params",
           "cache_capacity"),
    flag("hierarchical-allreduce", "1", "HOROVOD_HIERARCHICAL_ALLREDUCE",
         "hierarchical allreduce (--no-hierarchical-allreduce: off)", "params",
         "hierarchical_allreduce"),
    flag("no-hierarchical-allreduce", "0", "HOROVOD_HIERARCHICAL_ALLREDUCE", ""),
    flag("hierarchical-allgather", "1", "HOROVOD_HIERARCHICAL_ALLGATHER",
         "hierarchical allgather (--no-hierarchical-allgather: off)", "params",
         "hierarchical_allgather"),
    flag("no-hierarchical-allgather", "0", "HOROVOD_HIERARCHICAL_ALLGATHER", ""),
    flag("torus-allreduce", "1", "HOROVOD_TORUS_ALLREDUCE",
         "torus allreduce (--no-torus-allreduce: off)", "params", "torus_allreduce"),
    flag("no-torus-allreduce", "0", "HOROVOD_TORUS_ALLREDUCE", ""),
    flag("autotune", "1", kAutotune, "tune the parameters above while training", "autotune",
         "enabled"),
    flag("no-autotune", "0", kAutotune, "", {}, {}, kAutotune),
    valued("autotune-log-file", "FILE", K::kText, "HOROVOD_AUTOTUNE_LOG",
           "autotune's log (with --autotune)", "autotune", "log_file", kAutotune),
    valued("autotune-warmup-samples", "N", K::kWholeNumber, "HOROVOD_AUTOTUNE_WARMUP_SAMPLES",
           "samples discarded first (Horovod's default: 3)", "autotune", "warmup_samples",
           kAutotune),
    valued("autotune-steps-per-sample", "N", K::kWholeNumber, "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
           "steps per sample (Horovod's default: 10)", "autotune", "steps_per_sample", kAutotune),
    valued("autotune-bayes-opt-max-samples", "N", K::kWholeNumber,
           "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
           "Bayesian optimisation samples (Horovod's default: 20)", "autotune",
           "bayes_opt_max_samples", kAutotune),
    valued("autotune-gaussian-process-noise", "F", K::kFraction,
           "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "noise in [0, 1] (Horovod's default: 0.8)",
           "autotune", "gaussian_process_noise", kAutotune),
    valued("timeline-filename", "FILE", K::kText, std::string_view(kTimeline),
           "rank 0 writes Horovod's timeline here", "timeline", "filename"),
    flag("timeline-mark-cycles", "1", "HOROVOD_TIMELINE_MARK_CYCLES",
         "mark fusion cycles in the timeline", "timeline", "mark_cycles", kTimeline),
    flag("no-timeline-mark-cycles", "0", "HOROVOD_TIMELINE_MARK_CYCLES", "", {}, {}, kTimeline),
    flag("no-stall-check", "1", "HOROVOD_STALL_CHECK_DISABLE", "turn off the stall check"),
    flag("stall-check", "0", "HOROVOD_STALL_CHECK_DISABLE", "", "stall_check", "enabled"),
    valued("stall-check-warning-time-seconds", "S", K::kWholeNumber,
           "HOROVOD_STALL_CHECK_TIME_SECONDS", "warn after S seconds (Horovod's default: 60)",
           "stall_check", "warning_time_seconds"),
    valued("stall-check-shutdown-time-seconds", "S", K::kWholeNumber,
           "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
           "shut down after S seconds; 0: never (Horovod's default: 0)", "stall_check",
           "shutdown_time_seconds"),
    flag("mpi-threads-disable", "1", "HOROVOD_MPI_THREADS_DISABLE",
         "no MPI threads (MPI builds of Horovod)", "library_options", "mpi_threads_disable"),
    flag("no-mpi-threads-disable", "0", "HOROVOD_MPI_THREADS_DISABLE", ""),
    valued("num-nccl-streams", "N", K::kWholeNumber, "HOROVOD_NUM_NCCL_STREAMS",
           "NCCL streams per device", "library_options", "num_nccl_streams"),
    valued("thread-affinity", "N", K::kWholeNumber, "HOROVOD_THREAD_AFFINITY",
           "pin Horovod's background thread to core N", "library_options", "thread_affinity"),
    flag("tcp", "1", "NCCL_IB_DISABLE", "keep NCCL off InfiniBand (NCCL_IB_DISABLE=1)"),
    valued("gloo-timeout-seconds", "S", K::kWholeNumber, "HOROVOD_GLOO_TIMEOUT_SECONDS",
           "Gloo rendezvous and collective timeout (Horovod's default: 30)", "library_options",
           "gloo_timeout_seconds"),
    flag("log-without-timestamp", "1", "HOROVOD_LOG_HIDE_TIME",
         "Horovod's log lines without time stamps"),
    flag("log-with-timestamp", "0", "HOROVOD_LOG_HIDE_TIME", "", "logging", "with_timestamp"),
    flag("log-hide-timestamp", "1", "HOROVOD_LOG_HIDE_TIME", ""),
    flag("no-log-hide-timestamp", "0", "HOROVOD_LOG_HIDE_TIME", ""),
};

std::string origin_and_value(const TuningSetting& setting) {
  return setting.origin + " " + quoted(setting.value);
}

double parse_number(const TuningSetting& setting, bool whole) {
  const std::string_view text = setting.value;
  double value = 0;
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  const bool ok = ec == std::errc{} && ptr == text.data() + text.size() && std::isfinite(value) &&
                  (!whole || text.find('.') == std::string_view::npos);
  if (!ok || value < 0) {
    throw UsageError(origin_and_value(setting) + ": expected " +
                     (whole ? "a whole number" : "a number") + " >= 0");
  }
  return value;
}

std::string convert(const TuningSetting& setting) {
  const auto& param = *setting.param;
  switch (param.kind) {
    case K::kSwitch:
      return std::string(param.switch_value);
    case K::kText:
      if (setting.value.empty()) throw UsageError(setting.origin + ": needs a non-empty value");
      return setting.value;
    case K::kDecimal:
      parse_number(setting, false);
      return setting.value;
    case K::kFraction:
      if (parse_number(setting, false) > 1) {
        throw UsageError(origin_and_value(setting) + ": expected a number between 0 and 1");
      }
      return setting.value;
    case K::kWholeNumber:
    case K::kMegabytes: {
      constexpr double kMax = 1ull << 40;
      const double value = parse_number(setting, true);
      if (value > kMax) throw UsageError(origin_and_value(setting) + ": too large");
      const auto whole = static_cast<unsigned long long>(value);
      return std::to_string(param.kind == K::kMegabytes ? whole << 20 : whole);
    }
  }
  return setting.value;
}

}  // namespace

std::span<const TuningParam> tuning_params() {
  return kParams;
}

const TuningParam* find_tuning_param(std::string_view option_name) {
  for (const auto& param : kParams) {
    if (param.option.name == option_name) return &param;
  }
  return nullptr;
}

const TuningParam* switch_sibling(const TuningParam& param) {
  if (param.kind != K::kSwitch) return nullptr;
  for (const auto& other : kParams) {
    if (&other != &param && other.env == param.env && other.kind == K::kSwitch &&
        other.switch_value != param.switch_value) {
      return &other;
    }
  }
  return nullptr;
}

std::vector<const TuningParam*> opposite_switches(const TuningParam& param) {
  std::vector<const TuningParam*> out;
  if (param.kind != K::kSwitch) return out;
  for (const auto& other : kParams) {
    if (other.env == param.env && other.kind == K::kSwitch &&
        other.switch_value != param.switch_value) {
      out.push_back(&other);
    }
  }
  return out;
}

std::map<std::string, TuningValue> tuning_environment(std::span<const TuningSetting> settings) {
  std::map<std::string, TuningValue> env;
  std::map<std::string, const TuningParam*> winner;  // the param that wrote each variable
  for (const auto& setting : settings) {
    const std::string name(setting.param->env);
    env[name] = {convert(setting), setting.origin, setting.from_flag};
    winner[name] = setting.param;
  }
  const auto unmet = [&env](std::string_view required) {
    const auto it = env.find(std::string(required));
    return it == env.end() || it->second.value == "0";
  };
  std::vector<std::string> dropped;
  for (const auto& [name, param] : winner) {
    if (!param->requires_env.empty() && unmet(param->requires_env)) dropped.push_back(name);
  }
  for (const auto& name : dropped) env.erase(name);
  return env;
}

std::string horovod_log_level(std::string_view spdlog_level) {
  if (spdlog_level == "trace") return "TRACE";
  if (spdlog_level == "debug") return "DEBUG";
  if (spdlog_level == "info") return "INFO";
  if (spdlog_level == "warn") return "WARNING";
  if (spdlog_level == "error") return "ERROR";
  return "FATAL";  // critical, off
}

}  // namespace hvdrun::launcher
