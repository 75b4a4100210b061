// The whole of a small file the user names (a host file, a config file), read with bounds:
// a directory, a device that never ends, a file over `limit`, or a pipe or FIFO that gives no
// end within `wait` (one with no writer) is a usage error naming it.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace hvdrun::launcher {

inline constexpr std::size_t kUserFileLimit = 64u << 20;
inline constexpr std::chrono::milliseconds kUserFileWait{10000};

// The file's bytes. Throws UsageError "cannot read WHAT: REASON" (`what` names the file as the
// user gave it: "host file 'hosts.txt'").
std::string read_user_file(const std::string& path, const std::string& what,
                           std::size_t limit = kUserFileLimit,
                           std::chrono::milliseconds wait = kUserFileWait);

}  // namespace hvdrun::launcher
