// The whole of a small file the user names (a host file, a config file), read with a bound:
// a directory, a device that never ends or a file over `limit` is a usage error naming it.
#pragma once

#include <cstddef>
#include <string>

namespace hvdrun::launcher {

inline constexpr std::size_t kUserFileLimit = 64u << 20;

// The file's bytes. Throws UsageError "cannot read WHAT: REASON" (`what` names the file as the
// user gave it: "host file 'hosts.txt'").
std::string read_user_file(const std::string& path, const std::string& what,
                           std::size_t limit = kUserFileLimit);

}  // namespace hvdrun::launcher
