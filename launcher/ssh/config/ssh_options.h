// What the launcher tells the SSH client: options from the command line and the environment,
// the target of one host after ~/.ssh/config, and the timed phases of a connection. No libssh2
// here: this is the part the launcher sees.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher::ssh {

enum class HostKeyPolicy { kYes, kAcceptNew, kNo };

// "yes", "accept-new" or "no" (as --ssh-host-key-check takes them); nullopt otherwise.
std::optional<HostKeyPolicy> parse_host_key_policy(std::string_view text);

struct SshOptions {
  int port = 0;               // -p/--ssh-port; 0: Port of ~/.ssh/config, else 22
  std::string identity_file;  // -i/--ssh-identity-file, tried after the agent
  HostKeyPolicy host_key_policy = HostKeyPolicy::kAcceptNew;
  std::string home_dir;          // for ~, the default keys, config and known_hosts
  std::string local_user;        // the user when neither user@host nor User is given
  std::string agent_socket;      // SSH_AUTH_SOCK; empty = no agent
  std::string config_file;       // empty: <home>/.ssh/config; "none": no config file
  std::string known_hosts_file;  // empty: <home>/.ssh/known_hosts
  std::string global_known_hosts_file = "/etc/ssh/ssh_known_hosts";  // read only; "" = none
  bool use_default_keys = true;        // also try ~/.ssh/id_ed25519, id_ecdsa, id_rsa
  std::chrono::seconds keepalive{15};  // SSH keepalive interval of established sessions
};

// HOME (else the passwd entry), USER/LOGNAME (else the passwd entry) and SSH_AUTH_SOCK from
// the launcher's environment; everything else at its default.
SshOptions ssh_options_from_environment(const std::map<std::string, std::string>& environment);

struct SshTarget {
  std::string alias;      // the name as written in -H or the host file
  std::string host_name;  // where to connect: ~/.ssh/config HostName, else the alias
  int port = 22;          // -p, else config Port, else 22
  std::string user;       // user@host, else config User, else the local user
  std::vector<std::string> identity_files;  // -i, then config IdentityFile
};

// Applies -p/-i, user@host and ~/.ssh/config (HostName, Port, User, IdentityFile) to a host.
SshTarget resolve_target(const std::string& user, const std::string& host,
                         const SshOptions& options);

struct SshPhase {
  std::string name;  // "connect", "handshake", "host key", "auth", "start workers"
  std::chrono::microseconds duration{};
};

// "connect 0.4 ms, handshake 5.2 ms, ..." for --verbose.
std::string describe_phases(const std::vector<SshPhase>& phases);

}  // namespace hvdrun::launcher::ssh
