// known_hosts checks (ssh_known_hosts.h). Each line is loaded on its own into a libssh2
// collection, so that unsupported lines are skipped and a mismatch names its line number.
#include "launcher/ssh/ssh_known_hosts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/unique_fd.h"
#include "launcher/ssh/libssh2_util.h"
#include "launcher/ssh/ssh_error.h"

namespace hvdrun::launcher::ssh {
namespace {

struct KnownHostsDeleter {
  void operator()(LIBSSH2_KNOWNHOSTS* hosts) const { libssh2_knownhost_free(hosts); }
};
using KnownHostsPtr = std::unique_ptr<LIBSSH2_KNOWNHOSTS, KnownHostsDeleter>;

struct ServerKey {
  const char* data = nullptr;
  std::size_t size = 0;
  int typemask = 0;  // LIBSSH2_KNOWNHOST_KEY_*
  std::string type_name;
};

ServerKey server_key(LIBSSH2_SESSION* session) {
  ServerKey key;
  int type = 0;
  key.data = libssh2_session_hostkey(session, &key.size, &type);
  switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_SSHRSA;
      key.type_name = "RSA";
      break;
    case LIBSSH2_HOSTKEY_TYPE_DSS:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_SSHDSS;
      key.type_name = "DSA";
      break;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
      key.type_name = "ECDSA";
      break;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
      key.type_name = "ECDSA";
      break;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
      key.type_name = "ECDSA";
      break;
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_ED25519;
      key.type_name = "ED25519";
      break;
    default:
      key.typemask = LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
      key.type_name = "unknown";
  }
  key.typemask |= LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW;
  return key;
}

std::string base64(const unsigned char* data, std::size_t size) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < size; i += 3) {
    const unsigned v =
        (data[i] << 16) | (i + 1 < size ? data[i + 1] << 8 : 0) | (i + 2 < size ? data[i + 2] : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (i + 1 < size) out += kAlphabet[(v >> 6) & 63];
    if (i + 2 < size) out += kAlphabet[v & 63];
  }
  return out;  // unpadded, as OpenSSH prints fingerprints
}

std::string fingerprint(LIBSSH2_SESSION* session) {
  const char* hash = libssh2_hostkey_hash(session, LIBSSH2_HOSTKEY_HASH_SHA256);
  if (hash == nullptr) return "?";
  return "SHA256:" + base64(reinterpret_cast<const unsigned char*>(hash), 32);
}

struct Lookup {
  bool matched = false;
  std::string mismatch_file;
  int mismatch_line = 0;
};

// Scans one file, line by line; stops at the first matching line.
void scan(LIBSSH2_SESSION* session, const std::string& path, const std::string& name, int port,
          const ServerKey& key, Lookup& lookup) {
  std::ifstream in(path);
  std::string line;
  for (int number = 1; !lookup.matched && std::getline(in, line); ++number) {
    if (line.empty() || line.front() == '#') continue;
    KnownHostsPtr hosts(libssh2_knownhost_init(session));
    if (!hosts) return;
    if (libssh2_knownhost_readline(hosts.get(), line.c_str(), line.size(),
                                   LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
      continue;  // markers, certificates, key types libssh2 does not know: not ours to judge
    }
    const int result = libssh2_knownhost_checkp(hosts.get(), name.c_str(), port, key.data, key.size,
                                                key.typemask, nullptr);
    if (result == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
      lookup.matched = true;
    } else if (result == LIBSSH2_KNOWNHOST_CHECK_MISMATCH && lookup.mismatch_line == 0) {
      lookup.mismatch_file = path;
      lookup.mismatch_line = number;
    }
  }
}

std::string entry_name(const std::string& name, int port) {
  return port == 22 ? name : "[" + name + "]:" + std::to_string(port);
}

// Appends the server key for name:port to the user file (creating ~/.ssh if needed).
void append_entry(LIBSSH2_SESSION* session, const std::string& name, int port, const ServerKey& key,
                  const std::string& path, const std::string& where) {
  KnownHostsPtr hosts(libssh2_knownhost_init(session));
  libssh2_knownhost* entry = nullptr;
  const std::string host = entry_name(name, port);
  char line[16384];
  std::size_t size = 0;
  if (!hosts ||
      libssh2_knownhost_addc(hosts.get(), host.c_str(), nullptr, key.data, key.size, nullptr, 0,
                             key.typemask, &entry) != 0 ||
      libssh2_knownhost_writeline(hosts.get(), entry, line, sizeof line, &size,
                                  LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
    throw SshError(SshFailure::kHostKey, "cannot record the host key of " + where);
  }
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) ::mkdir(path.substr(0, slash).c_str(), 0700);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid() || write_all(fd.get(), std::string_view(line, size)) != 0) {
    throw SshError(SshFailure::kHostKey, "cannot add the host key of " + where + " to " + path +
                                             ": " + std::strerror(errno));
  }
}

}  // namespace

std::string verify_host_key(LIBSSH2_SESSION* session, const std::string& name, int port,
                            const std::string& where, HostKeyPolicy policy,
                            const KnownHostsFiles& files) {
  const ServerKey key = server_key(session);
  if (key.data == nullptr) {
    throw SshError(SshFailure::kHandshake, "no host key received from " + where);
  }
  Lookup lookup;
  scan(session, files.user_file, name, port, key, lookup);
  if (!lookup.matched && !files.global_file.empty()) {
    scan(session, files.global_file, name, port, key, lookup);
  }
  if (lookup.matched) return {};
  const std::string offered = key.type_name + " key " + fingerprint(session);
  if (lookup.mismatch_line != 0) {
    const std::string file = home_relative(lookup.mismatch_file, files.home_dir);
    const std::string message =
        "host key for " + where + " does not match " + file + ":" +
        std::to_string(lookup.mismatch_line) + "; the server offers " + offered +
        ". The host may have been reinstalled, or someone may be intercepting the connection. "
        "If the change is expected, remove the old key with: ssh-keygen -R '" +
        entry_name(name, port) + "' -f " + file;
    if (policy != HostKeyPolicy::kNo) throw SshError(SshFailure::kHostKey, message);
    return "ignored (--ssh-host-key-check no): " + message;
  }
  const std::string file = home_relative(files.user_file, files.home_dir);
  switch (policy) {
    case HostKeyPolicy::kYes:
      throw SshError(SshFailure::kHostKey,
                     "host key for " + where + " is not in " + file + " (the server offers " +
                         offered +
                         "); add it (ssh-keyscan, or connect once with ssh) or use "
                         "--ssh-host-key-check accept-new");
    case HostKeyPolicy::kAcceptNew:
      append_entry(session, name, port, key, files.user_file, where);
      return "added " + offered + " of " + where + " to " + file;
    case HostKeyPolicy::kNo:
      return "host key of " + where + " not checked (--ssh-host-key-check no)";
  }
  return {};
}

}  // namespace hvdrun::launcher::ssh
