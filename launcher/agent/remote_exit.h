// Reading a remote command's end through its SSH channel (signal names; the end itself is a
// ProcessEnd, common/process_end.h; which of its output streams bytes came from is a
// StreamKind, common/stream_kind.h).
#pragma once

#include <string>

#include "common/stream_kind.h"

namespace hvdrun::launcher::ssh {

// The number of an SSH signal name ("TERM", "KILL"...; RFC 4254 names), 0 if unknown.
int signal_from_ssh_name(const std::string& name);

}  // namespace hvdrun::launcher::ssh
