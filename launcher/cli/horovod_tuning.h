// horovodrun's tuning flags (fusion, cycle time, cache, hierarchical and torus collectives,
// autotune, timeline, stall check, library options, log time stamps) and the HOROVOD_*
// variables they become in the workers' environment, as horovodrun writes them: megabytes
// become bytes, switches 1 or 0, autotune's and the timeline's companions only when autotune
// is on or a timeline file is set. The same table maps --config-file's YAML keys.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/cli/cli_options.h"

namespace hvdrun::launcher {

enum class TuningKind {
  kMegabytes,    // whole number >= 0, written as bytes
  kDecimal,      // number >= 0, written as given
  kWholeNumber,  // whole number >= 0
  kFraction,     // number in [0, 1]
  kText,         // non-empty text (a file name)
  kSwitch,       // no value: writes `switch_value`
};

struct TuningParam {
  OptionInfo option;
  std::string_view env;
  TuningKind kind = TuningKind::kWholeNumber;
  std::string_view switch_value;  // kSwitch: "1" or "0"
  std::string_view requires_env;  // written only if this variable ends up set and not "0"
  std::string_view yaml_section;  // --config-file: `section: {key: value}`; empty: not in files
  std::string_view yaml_key;      // a switch's key selects it when true, its sibling when false
};

std::span<const TuningParam> tuning_params();
// nullptr if `option_name` is not a tuning option.
const TuningParam* find_tuning_param(std::string_view option_name);
// The switch writing the other value to the same variable that carries the config file's
// key (--no-autotune for --autotune), or nullptr.
const TuningParam* switch_sibling(const TuningParam& param);
// Every other switch writing a different value to the same variable.
std::vector<const TuningParam*> opposite_switches(const TuningParam& param);

// One value for a tuning option, from the command line or the config file.
struct TuningSetting {
  const TuningParam* param = nullptr;
  std::string value;   // empty for a switch
  std::string origin;  // for messages: "--cycle-time-ms" or "job.yaml:4: params.cycle_time_ms"
  bool from_flag = false;
};

struct TuningValue {
  std::string value;
  std::string origin;
  bool from_flag = false;  // a tuning flag set it (an -x of the same variable is then an error)
  bool operator==(const TuningValue&) const = default;
};

// Validates every setting (UsageError naming its origin and value) and returns the
// variables they write; a later setting of the same variable replaces an earlier one.
std::map<std::string, TuningValue> tuning_environment(std::span<const TuningSetting> settings);

// spdlog level name (cli_values.h) -> HOROVOD_LOG_LEVEL's name (TRACE .. FATAL).
std::string horovod_log_level(std::string_view spdlog_level);

}  // namespace hvdrun::launcher
