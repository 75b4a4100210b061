// The part of ~/.ssh/config that hvdrun honours: Host blocks (patterns with * and ?, negated
// with !, matched by fnmatch) and the keywords HostName (with %h, %%), Port, User and
// IdentityFile (with ~, %h, %%). OpenSSH's rules: the first value obtained wins, IdentityFile
// accumulates, keywords are case-insensitive, "Keyword value" or "Keyword=value". Match blocks
// are skipped (their settings are not applied), Include and other keywords are ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher::ssh {

struct SshConfigEntry {
  std::optional<std::string> host_name;
  std::optional<int> port;
  std::optional<std::string> user;
  std::vector<std::string> identity_files;  // in order, ~ expanded
  bool operator==(const SshConfigEntry&) const = default;
};

// Whether `host` matches a Host line's pattern list ("a*.example b? !bad").
bool ssh_host_matches(std::string_view patterns, const std::string& host);

// Looks `host` up in config text. `origin` names the file in errors ("~/.ssh/config"); a bad
// Port is a UsageError naming origin:line.
SshConfigEntry lookup_ssh_config(std::string_view text, const std::string& host,
                                 const std::string& home_dir, const std::string& origin);

// The same on a file; a missing file gives an empty entry.
SshConfigEntry read_ssh_config(const std::string& path, const std::string& host,
                               const std::string& home_dir);

}  // namespace hvdrun::launcher::ssh
