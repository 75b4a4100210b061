// --config-file: horovodrun's YAML file of tunables (yaml-cpp). Top-level keys: controller,
// params, autotune, timeline, stall_check, library_options, logging; each setting maps to the
// same HOROVOD_* variable as its flag (horovod_tuning.h). Unknown keys are reported as notes
// and ignored, as horovodrun ignores them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/horovod_tuning.h"

namespace hvdrun::launcher {

struct ConfigFile {
  std::vector<TuningSetting> settings;   // in file order
  std::optional<std::string> log_level;  // logging.level, as spdlog's name
  std::vector<std::string> notes;        // "job.yaml:7: unknown key 'params.fusion' ignored"
};

// Throws UsageError "FILE:LINE: ..." for a file that cannot be read, bad YAML, a value of the
// wrong kind, or `controller: mpi` (hvdrun runs Horovod in Gloo mode) unless `gloo_flag`
// (--gloo on the command line, which wins over the file's controller as in horovodrun).
ConfigFile load_config_file(const std::string& path, bool gloo_flag = false);

}  // namespace hvdrun::launcher
