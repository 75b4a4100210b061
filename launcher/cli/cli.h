// Command line of hvdrun -> JobSpec (Boost.Program_options). horovodrun's flag names and
// meanings, its single-dash spellings (-np, -hostfile, -prefix-timestamp), unambiguous
// long-option prefixes, -x NAME[=VALUE], and `--` or the first positional word ending the
// options (everything after belongs to the command).
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

enum class CliAction { kRun, kHelp, kVersion, kCheckBuild };

struct CliResult {
  CliAction action = CliAction::kRun;
  JobSpec spec;      // valid when action == kRun
  std::string text;  // help, version or --check-build text otherwise
  // Non-fatal remarks for the user, e.g. "hosts.txt:3: max_slots ignored".
  std::vector<std::string> notes;
};

// `args` excludes argv[0]. `environment` is the launcher's environment (for
// HOROVOD_START_TIMEOUT, HVDRUN_LOG_LEVEL, and -x NAME lookups). Throws UsageError with one
// line naming the flag or value at fault.
CliResult parse_cli(std::span<const std::string> args,
                    const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
