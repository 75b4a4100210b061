// Whether a host name refers to this machine: "localhost", a loopback address, this
// machine's hostname, or a name resolving to one of this machine's interface addresses.
#pragma once

#include <string_view>

namespace hvdrun::launcher {

bool is_local_host(std::string_view name);

}  // namespace hvdrun::launcher
