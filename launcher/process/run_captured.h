// A short command run to its end with its stdout captured, bounded in time: for probes such as
// asking python3 what the installed Horovod was built with.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/process_end.h"

namespace hvdrun::launcher {

struct Captured {
  ProcessEnd end;
  std::string out;         // at most `limit` bytes of its stdout
  bool timed_out = false;  // killed (its process group) at the deadline
};

// Runs argv (spawn(): its own process group, stdin /dev/null, `env` exactly) and reads its
// stdout until it ends or `timeout` passes (then its group is killed). Throws what spawn()
// throws; an exec failure is an end with exit code 127.
Captured run_captured(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      std::chrono::milliseconds timeout, std::size_t limit = 64u << 10);

}  // namespace hvdrun::launcher
