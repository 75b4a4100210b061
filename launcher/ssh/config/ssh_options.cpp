// SSH options from the launcher's environment, targets after ~/.ssh/config (ssh_options.h).
#include "launcher/ssh/config/ssh_options.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>

#include "launcher/ssh/config/ssh_config.h"

namespace hvdrun::launcher::ssh {
namespace {

std::string lookup(const std::map<std::string, std::string>& environment, const char* name) {
  const auto it = environment.find(name);
  return it == environment.end() ? std::string() : it->second;
}

}  // namespace

std::optional<HostKeyPolicy> parse_host_key_policy(std::string_view text) {
  if (text == "yes") return HostKeyPolicy::kYes;
  if (text == "accept-new") return HostKeyPolicy::kAcceptNew;
  if (text == "no") return HostKeyPolicy::kNo;
  return std::nullopt;
}

SshOptions ssh_options_from_environment(const std::map<std::string, std::string>& environment) {
  SshOptions options;
  options.home_dir = lookup(environment, "HOME");
  options.local_user = lookup(environment, "USER");
  if (options.local_user.empty()) options.local_user = lookup(environment, "LOGNAME");
  if (options.home_dir.empty() || options.local_user.empty()) {
    passwd entry{};
    passwd* found = nullptr;
    char buffer[4096];
    if (::getpwuid_r(::getuid(), &entry, buffer, sizeof buffer, &found) == 0 && found) {
      if (options.home_dir.empty()) options.home_dir = found->pw_dir;
      if (options.local_user.empty()) options.local_user = found->pw_name;
    }
  }
  options.agent_socket = lookup(environment, "SSH_AUTH_SOCK");
  return options;
}

SshTarget resolve_target(const std::string& user, const std::string& host,
                         const SshOptions& options) {
  SshConfigEntry config;
  if (options.config_file != "none") {
    const std::string path =
        options.config_file.empty() ? options.home_dir + "/.ssh/config" : options.config_file;
    config = read_ssh_config(path, host, options.home_dir);
  }
  SshTarget target;
  target.alias = host;
  target.host_name = config.host_name.value_or(host);
  target.port = options.port != 0 ? options.port : config.port.value_or(22);
  target.user = !user.empty() ? user : config.user.value_or(options.local_user);
  if (!options.identity_file.empty()) target.identity_files.push_back(options.identity_file);
  for (const auto& file : config.identity_files) target.identity_files.push_back(file);
  return target;
}

std::string describe_phases(const std::vector<SshPhase>& phases) {
  std::string out;
  for (const auto& phase : phases) {
    char text[64];
    std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(phase.duration.count()) / 1e3);
    out += (out.empty() ? "" : ", ") + phase.name + " " + text;
  }
  return out;
}

}  // namespace hvdrun::launcher::ssh
