// Durations in the words of log lines and messages.
#pragma once

#include <chrono>
#include <string>

namespace hvdrun {

// "30 s" for whole seconds, else "250 ms".
std::string describe_duration(std::chrono::milliseconds d);

}  // namespace hvdrun
