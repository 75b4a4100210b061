// The table of hvdrun's command-line options (names, horovodrun's single-dash aliases, value
// names, help groups and texts) and the --help text built from it. cli.cpp scans and parses
// with it; horovod_tuning.h contributes horovodrun's tuning flags.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace hvdrun::launcher {

struct OptionInfo {
  std::string_view name;        // Program_options name; "--name" is a spelling if `long_form`
  std::string_view alias;       // "-np", "-H", ... or empty
  std::string_view value_name;  // empty for a flag
  bool long_form = true;
  bool repeatable = false;
  std::string_view group;
  std::string_view help;
  std::string_view default_text;  // empty: no default shown
  std::string_view refusal;       // non-empty: giving the option is an error with this reason
  std::string_view other_name{};  // a second long name (horovodrun's --min-num-proc), or empty
};

namespace option_group {
inline constexpr std::string_view kJob = "Job";
inline constexpr std::string_view kHosts = "Hosts";
inline constexpr std::string_view kElastic = "Elastic jobs";
inline constexpr std::string_view kOutput = "Output and logging";
inline constexpr std::string_view kNetwork = "Network and SSH (remote hosts)";
inline constexpr std::string_view kTuning = "Horovod tuning (exported to the workers, see README)";
inline constexpr std::string_view kCompat = "horovodrun compatibility";
inline constexpr std::string_view kOther = "Other";
}  // namespace option_group

inline constexpr std::string_view kUsage = "usage: hvdrun -np N [options] program [args...]";

// Every option, in help order: hvdrun's own, then horovodrun's tuning flags.
std::span<const OptionInfo> cli_options();

std::string help_text();

}  // namespace hvdrun::launcher
