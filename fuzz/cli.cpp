// libFuzzer target: hvdrun's command line (launcher/cli.h). The input is split at NUL bytes
// into arguments; every refusal must be a UsageError (one line naming the culprit), never a
// crash or another exception. Inputs with a '/' are skipped, so that --hostfile or
// --config-file never reads /dev/zero, a FIFO or a device (names in the working directory
// are still read: they are ordinary files).
#include "launcher/cli/cli.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hvdrun/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher;
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.emplace_back();
    } else {
      args.back().push_back(static_cast<char>(data[i]));
    }
  }
  if (args.size() > 64) return 0;
  for (const auto& a : args) {
    if (a == "-cb" || a == "--check-build") return 0;  // probes the machine, parses nothing
    if (a.find('/') != std::string::npos) return 0;    // could name /dev/zero or a FIFO
  }
  static const std::map<std::string, std::string> environment{{"HOME", "/nonexistent"}};
  try {
    const CliResult result = parse_cli(args, environment);
    if (result.action == CliAction::kRun &&
        (result.spec.num_proc < 1 || result.spec.command.empty())) {
      __builtin_trap();  // a job to run without processes or a program
    }
  } catch (const hvdrun::UsageError& e) {
    const std::string_view what = e.what();
    if (what.empty()) __builtin_trap();  // an error must say something
  }
  return 0;
}
