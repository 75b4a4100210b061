// Host key verification against OpenSSH known_hosts files (plain or hashed entries, "[host]:port"
// for other ports): policy yes | accept-new | no, new hosts appended under accept-new, and a
// mismatch reported with the file and line of the stale entry.
#pragma once

#include <libssh2.h>

#include <string>

#include "launcher/ssh/config/ssh_options.h"

namespace hvdrun::launcher::ssh {

struct KnownHostsFiles {
  std::string user_file;    // read, and appended to under accept-new
  std::string global_file;  // read only; empty = none
  std::string home_dir;     // shown as "~" in messages
};

// Checks the server key of a session that completed its handshake, for the host `name` (as
// connected to, after ~/.ssh/config's HostName) and `port`. `where` names the host in messages:
// "hvdt-h1 (10.213.0.11:22)". Throws SshError(kHostKey) on a mismatch (policy yes or
// accept-new) or an unknown host under policy yes. Returns a note for the log ("added ...").
std::string verify_host_key(LIBSSH2_SESSION* session, const std::string& name, int port,
                            const std::string& where, HostKeyPolicy policy,
                            const KnownHostsFiles& files);

}  // namespace hvdrun::launcher::ssh
