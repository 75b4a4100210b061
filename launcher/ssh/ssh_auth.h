// Public-key authentication of an SSH session, in OpenSSH's order: the user's ssh-agent, the
// identity files given (-i, then IdentityFile of ~/.ssh/config), then the default keys
// ~/.ssh/id_ed25519, id_ecdsa, id_rsa. Unencrypted key files only (encrypted keys belong in
// the agent). A failure lists every source tried and why it did not work.
#pragma once

#include <libssh2.h>

#include <string>
#include <vector>

namespace hvdrun::launcher::ssh {

struct AuthSources {
  std::string user;                         // remote user name
  std::string agent_socket;                 // SSH_AUTH_SOCK; empty = no agent
  std::vector<std::string> identity_files;  // explicit keys, in order
  std::vector<std::string> default_keys;    // tried after them unless already listed
  std::string home_dir;                     // shown as "~" in messages
};

// The default key files under `home_dir`/.ssh.
std::vector<std::string> default_key_files(const std::string& home_dir);

// Authenticates the session (blocking mode). `where` names the host: "hvdt-h1 (10.213.0.11:22)".
// Throws SshError(kAuth) listing what was tried, or kTimeout / kLost.
void authenticate(LIBSSH2_SESSION* session, const AuthSources& sources, const std::string& where);

}  // namespace hvdrun::launcher::ssh
