// The words of hvdrun's command line before the program, scanned with argparse's rules:
// "--name", "--name=value", an unambiguous prefix of a long name, horovodrun's single-dash
// long names (-np, -hostfile, -prefix-timestamp), `--` before the program; each option's value
// checked for presence and repeats. The result is normalised for Boost.Program_options.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

namespace hvdrun::launcher {

// `message` with the pointer to --help that usage errors end with.
std::string see_help(std::string message);

// The options part, normalised for Program_options, and the command.
struct Scanned {
  std::vector<std::string> tokens;              // "--name=value" or "--name"
  std::map<std::string, std::string> spelling;  // option name -> spelling the user used
  std::vector<std::string> command;
};

// Throws UsageError naming the option for an unknown or ambiguous one, a missing or empty
// value, a value given to a flag, or a single-valued option given twice.
Scanned scan(std::span<const std::string> args);

}  // namespace hvdrun::launcher
