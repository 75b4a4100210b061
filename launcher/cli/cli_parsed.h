// What cli.cpp and cli_hosts.cpp share while they parse the command line: the parsed options
// with the spelling each was given in (for messages), and the part of the parse in
// cli_hosts.cpp. Private to the cli library.
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

namespace po = boost::program_options;

struct Parsed {
  po::variables_map vm;
  std::map<std::string, std::string> spelling;

  std::optional<std::string> value(const std::string& name) const {
    if (!vm.count(name)) return std::nullopt;
    return vm[name].as<std::string>();
  }
  std::vector<std::string> values(const std::string& name) const {
    if (!vm.count(name)) return {};
    return vm[name].as<std::vector<std::string>>();
  }
  bool flag(const std::string& name) const { return vm.count(name) && vm[name].as<bool>(); }
  // Given on the command line (a switch set, or a value).
  bool given(const std::string& name) const {
    if (!vm.count(name)) return false;
    const auto& any = vm[name].value();
    return any.type() != typeid(bool) || vm[name].as<bool>();
  }
  std::string spelled(const std::string& name) const { return spelling.at(name); }
};

// Hosts from -H or --hostfile, else from the Slurm allocation hvdrun runs in, else
// localhost:num_proc; and num_proc (default: all slots); the elastic flags checked against
// them (cli_hosts.cpp).
void apply_hosts(JobSpec& spec, const Parsed& parsed, std::vector<std::string>& notes,
                 const std::map<std::string, std::string>& environment);

}  // namespace hvdrun::launcher
