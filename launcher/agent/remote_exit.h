// Reading a remote command's end through its SSH channel (signal names; the end itself is a
// ProcessEnd, common/process_end.h), and which of its output streams bytes came from.
#pragma once

#include <string>

namespace hvdrun::launcher::ssh {

enum class OutputStream { kStdout, kStderr };

// The number of an SSH signal name ("TERM", "KILL"...; RFC 4254 names), 0 if unknown.
int signal_from_ssh_name(const std::string& name);

}  // namespace hvdrun::launcher::ssh
