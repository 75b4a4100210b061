// Public-key authentication through ssh-agent and key files (ssh_auth.h).
#include "launcher/ssh/ssh_auth.h"

#include <unistd.h>

#include <algorithm>
#include <memory>

#include "launcher/ssh/libssh2_util.h"
#include "launcher/ssh/ssh_error.h"

namespace hvdrun::launcher::ssh {
namespace {

struct AgentDeleter {
  void operator()(LIBSSH2_AGENT* agent) const {
    libssh2_agent_disconnect(agent);
    libssh2_agent_free(agent);
  }
};

// Fatal for the whole attempt: the connection is gone or the deadline passed.
void check_fatal(LIBSSH2_SESSION* session, int rc, const std::string& where) {
  if (rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_SOCKET_SEND ||
      rc == LIBSSH2_ERROR_SOCKET_RECV || rc == LIBSSH2_ERROR_SOCKET_DISCONNECT ||
      rc == LIBSSH2_ERROR_SOCKET_TIMEOUT) {
    throw_libssh2_error(session, rc, "authentication with " + where, SshFailure::kLost);
  }
}

// True when authenticated; otherwise appends what happened to `tried`.
bool try_agent(LIBSSH2_SESSION* session, const AuthSources& sources, const std::string& where,
               std::vector<std::string>& tried) {
  if (sources.agent_socket.empty()) {
    tried.push_back("ssh-agent (SSH_AUTH_SOCK not set)");
    return false;
  }
  std::unique_ptr<LIBSSH2_AGENT, AgentDeleter> agent(libssh2_agent_init(session));
  if (!agent) {
    tried.push_back("ssh-agent (libssh2 could not create an agent client)");
    return false;
  }
  libssh2_agent_set_identity_path(agent.get(), sources.agent_socket.c_str());
  if (libssh2_agent_connect(agent.get()) != 0) {
    tried.push_back("ssh-agent at " + sources.agent_socket + " (cannot connect to it)");
    return false;
  }
  if (libssh2_agent_list_identities(agent.get()) != 0) {
    tried.push_back("ssh-agent (cannot list its keys)");
    return false;
  }
  int count = 0;
  libssh2_agent_publickey* identity = nullptr;
  libssh2_agent_publickey* previous = nullptr;
  while (libssh2_agent_get_identity(agent.get(), &identity, previous) == 0) {
    ++count;
    const int rc = libssh2_agent_userauth(agent.get(), sources.user.c_str(), identity);
    if (rc == 0) return true;
    check_fatal(session, rc, where);
    previous = identity;
  }
  tried.push_back("ssh-agent (" + std::to_string(count) + (count == 1 ? " key" : " keys") +
                  ", none accepted)");
  return false;
}

bool try_key_file(LIBSSH2_SESSION* session, const AuthSources& sources, const std::string& path,
                  const std::string& where, std::vector<std::string>& tried) {
  const std::string shown = home_relative(path, sources.home_dir);
  if (::access(path.c_str(), F_OK) != 0) {
    tried.push_back(shown + " (not present)");
    return false;
  }
  const std::string public_key = path + ".pub";
  const bool has_public = ::access(public_key.c_str(), R_OK) == 0;
  const int rc = libssh2_userauth_publickey_fromfile_ex(
      session, sources.user.c_str(), static_cast<unsigned>(sources.user.size()),
      has_public ? public_key.c_str() : nullptr, path.c_str(), "");
  if (rc == 0) return true;
  check_fatal(session, rc, where);
  if (rc == LIBSSH2_ERROR_FILE) {
    tried.push_back(shown +
                    " (cannot use the key file: unreadable, or encrypted: load it into "
                    "ssh-agent instead)");
  } else {
    tried.push_back(shown + " (rejected by the server)");
  }
  return false;
}

}  // namespace

std::vector<std::string> default_key_files(const std::string& home_dir) {
  return {home_dir + "/.ssh/id_ed25519", home_dir + "/.ssh/id_ecdsa", home_dir + "/.ssh/id_rsa"};
}

void authenticate(LIBSSH2_SESSION* session, const AuthSources& sources, const std::string& where) {
  const char* methods = libssh2_userauth_list(session, sources.user.c_str(),
                                              static_cast<unsigned>(sources.user.size()));
  if (methods == nullptr) {
    if (libssh2_userauth_authenticated(session)) return;  // the server accepted "none"
    const int rc = libssh2_session_last_errno(session);
    check_fatal(session, rc, where);
    throw_libssh2_error(session, rc, "asking " + where + " for authentication methods",
                        SshFailure::kAuth);
  }
  const std::string accepted = methods;
  const std::string who = sources.user + "@" + where;
  if (accepted.find("publickey") == std::string::npos) {
    throw SshError(SshFailure::kAuth, "authentication as " + who +
                                          " impossible: the server accepts only " + accepted +
                                          ", and hvdrun uses public keys");
  }
  std::vector<std::string> tried;
  if (try_agent(session, sources, where, tried)) return;
  std::vector<std::string> files = sources.identity_files;
  for (const auto& key : sources.default_keys) {
    if (std::find(files.begin(), files.end(), key) == files.end()) files.push_back(key);
  }
  for (const auto& file : files) {
    if (try_key_file(session, sources, file, where, tried)) return;
  }
  std::string list;
  for (const auto& entry : tried) list += (list.empty() ? "" : "; ") + entry;
  throw SshError(SshFailure::kAuth,
                 "authentication as " + who + " failed; tried: " + list +
                     ". Add your public key to ~" + sources.user +
                     "/.ssh/authorized_keys on that host (ssh-copy-id), load a key into "
                     "ssh-agent, or pass -i/--ssh-identity-file");
}

}  // namespace hvdrun::launcher::ssh
