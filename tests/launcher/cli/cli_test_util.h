// Helpers of the parse_cli tests: parse, the JobSpec of a run, the one-line UsageError.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/cli/cli.h"

namespace hvdrun::launcher {

using Env = std::map<std::string, std::string>;
inline CliResult parse(std::vector<std::string> args, const Env& env = {}) {
  return parse_cli(std::span<const std::string>(args), env);
}

inline JobSpec spec_of(std::vector<std::string> args, const Env& env = {}) {
  auto result = parse(std::move(args), env);
  EXPECT_EQ(result.action, CliAction::kRun);
  return result.spec;
}

// The UsageError message of parsing `args`; fails the test if none or if it spans lines.
inline std::string error_of(std::vector<std::string> args, const Env& env = {}) {
  try {
    parse(std::move(args), env);
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

}  // namespace hvdrun::launcher
