// Several entries of a host list that name this machine ("localhost", "127.0.0.1", its
// hostname: horovodrun's documented one-machine set-up `-H localhost:1,127.0.0.1:1`, and
// Horovod's elastic examples' discovery scripts) run as one host with the sum of their slots,
// so that local ranks and GPU pinning count one machine's slots once.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// Merges the entries among the first `used` of `hosts` that name this machine (`is_local`,
// default is_local_host()) into the first of them (its name and origin kept, its slots the
// sum, at most kMaxSlots). Returns the line that says so, or empty when there was at most one.
std::string merge_local_aliases(std::vector<HostSpec>& hosts, std::size_t used,
                                const std::function<bool(const std::string&)>& is_local = {});

// How many hosts, from the first, -np `num_proc` ranks fill (placement fills them in order).
std::size_t hosts_used(const std::vector<HostSpec>& hosts, int num_proc);

}  // namespace hvdrun::launcher
