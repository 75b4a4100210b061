// Stack dump excerpts (stack_text.h).
#include "launcher/stacks/stack_text.h"

#include <sstream>

namespace hvdrun::launcher {

std::vector<std::string> main_thread_frames(const std::string& eu_stack, pid_t pid,
                                            std::size_t frames) {
  std::vector<std::string> out;
  std::istringstream in(eu_stack);
  const std::string header = "TID " + std::to_string(pid) + ":";
  std::string line;
  bool inside = false;
  while (std::getline(in, line) && out.size() < frames) {
    if (line.starts_with("TID ")) {
      if (inside) break;
      inside = line == header;
      continue;
    }
    if (inside && line.starts_with("#")) out.push_back(line);
  }
  return out;
}

std::vector<std::string> python_top_frames(const std::string& dump, std::size_t frames,
                                           std::size_t threads) {
  std::vector<std::string> out;
  std::istringstream in(dump);
  std::string line;
  std::size_t seen_threads = 0;
  std::size_t in_thread = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("Thread 0x") || line.starts_with("Current thread 0x")) {
      if (++seen_threads > threads) break;
      out.push_back(line);
      in_thread = 0;
    } else if (line.starts_with("  File ") && seen_threads > 0 && in_thread < frames) {
      out.push_back(line);
      ++in_thread;
    }
  }
  return out;
}

}  // namespace hvdrun::launcher
