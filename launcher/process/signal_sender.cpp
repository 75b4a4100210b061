// A signal's sender (signal_sender.h).
#include "launcher/process/signal_sender.h"

#include <fstream>

namespace hvdrun::launcher {

std::string process_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

bool sent_by_step_daemon(pid_t sender) {
  return sender > 0 && process_name(sender) == "slurmstepd";
}

}  // namespace hvdrun::launcher
