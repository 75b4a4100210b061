// The runtime's Options as parse_options reads them from a map of HVDRUN_* variables, not
// from the process environment.
#pragma once

#include <map>
#include <string>

#include "worker-runtime/options.h"

namespace hvdrun::test {

inline Options options_from(const std::map<std::string, std::string>& vars) {
  return parse_options([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace hvdrun::test
