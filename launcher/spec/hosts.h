// Host lists: -H "a:2,user@b,[fe80::1]:4" and host files (`host slots=N`, `host:N`, bare
// `host`, `max_slots=` ignored with a note, blank lines and # comments). Errors name the
// entry, or file:line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// Largest slot count of one host (and process count of a job) hvdrun accepts.
inline constexpr int kMaxSlots = 1'000'000;

// The slots `hosts` give together, at most kMaxSlots.
int total_slots(const std::vector<HostSpec>& hosts);

std::vector<HostSpec> parse_hosts_flag(std::string_view text);
// `notes` receives non-fatal remarks (e.g. "hosts.txt:3: max_slots ignored").
std::vector<HostSpec> parse_hostfile(const std::string& path, std::vector<std::string>& notes);
std::vector<HostSpec> parse_hostfile_text(std::string_view text, const std::string& path,
                                          std::vector<std::string>& notes);

// The output of a --host-discovery-script: one `host` or `host:slots` per line ([user@] and
// [IPv6] as in -H), whitespace trimmed, blank lines and # comments skipped, a line repeated
// exactly dropped; a host without slots has `slots_per_host` (default 1). No host is a valid
// answer (every host gone). Errors name the script and the line.
std::vector<HostSpec> parse_discovery_output(std::string_view text, const std::string& script,
                                             std::optional<int> slots_per_host);

// `text` in single quotes for a one-line message, control characters escaped (\n, \xNN); past
// kQuotedMost bytes it is cut ("'abc...' (1048576 bytes)"): a message never echoes a huge input.
inline constexpr std::size_t kQuotedMost = 200;
std::string quoted(std::string_view text);

}  // namespace hvdrun::launcher
