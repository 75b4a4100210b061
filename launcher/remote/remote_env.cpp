// The environment shipped to remote workers (remote_spawn.h): the deny list of launcher-only
// variables, the agent's command line and default path.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>

#include "launcher/remote/remote_spawn.h"

namespace hvdrun::launcher::remote {
namespace {

constexpr std::array<std::string_view, 14> kDeniedNames = {"PWD",
                                                           "OLDPWD",
                                                           "HOSTNAME",
                                                           "DISPLAY",
                                                           "SHLVL",
                                                           "_",
                                                           "HOME",
                                                           "USER",
                                                           "LOGNAME",
                                                           "SHELL",
                                                           "XDG_RUNTIME_DIR",
                                                           "MAIL",
                                                           "DBUS_SESSION_BUS_ADDRESS",
                                                           "_HOROVOD_SECRET_KEY"};

constexpr std::array<std::string_view, 3> kDeniedPrefixes = {"SSH_", "BASH_FUNC_", "XDG_SESSION_"};
// The launcher's GPU selection (CUDA_VISIBLE_DEVICES and the like, as horovodrun drops them):
// another machine's GPUs are not this one's.
constexpr std::array<std::string_view, 1> kDeniedParts = {"CUDA_VISIBLE_DEVICES"};

}  // namespace

bool is_launcher_only_variable(std::string_view name) {
  if (std::find(kDeniedNames.begin(), kDeniedNames.end(), name) != kDeniedNames.end()) {
    return true;
  }
  return std::any_of(kDeniedPrefixes.begin(), kDeniedPrefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); }) ||
         std::any_of(kDeniedParts.begin(), kDeniedParts.end(),
                     [&](std::string_view part) { return name.find(part) != name.npos; });
}

std::vector<std::string> remote_worker_environment(const std::vector<std::string>& env,
                                                   const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& entry : env) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    const bool kept = std::find(keep.begin(), keep.end(), name) != keep.end();
    if (kept || !is_launcher_only_variable(name)) out.push_back(entry);
  }
  return out;
}

std::string default_agent_path() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string("hvdrun");
}

std::string remote_agent_command(const std::string& agent_path) {
  std::string quoted = "'";
  for (const char c : agent_path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "' --node-agent";
}

}  // namespace hvdrun::launcher::remote
