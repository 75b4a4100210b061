// Value parsers of hvdrun's command line (cli.cpp): counts, seconds, log levels, -x entries,
// interface lists and the SSH host key policy. Each throws UsageError naming the flag (as the
// user spelled it) and the value at fault.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

inline constexpr int kMaxStartTimeout = 86'400;
inline constexpr int kMaxRestarts = 1'000'000;
inline constexpr double kMaxGracePeriod = 86'400;

// A whole number in [min, max] ("-np 0", "--ssh-port x" are errors); `meaning` names it.
int parse_count(std::string_view what, std::string_view text, int max, std::string_view meaning,
                int min = 1);

// Seconds with decimals in [0, kMaxGracePeriod] -> milliseconds.
std::chrono::milliseconds parse_grace(std::string_view what, std::string_view text);

// --forward-signals: "none", or names from HUP, INT, QUIT, USR1, USR2 (any case, "SIG" prefix
// allowed), comma-separated; no duplicates.
std::vector<int> parse_forwarded_signals(std::string_view what, std::string_view text);

// --line-prefix: "rank", "host-rank" or "none".
OutputPrefix parse_output_prefix(std::string_view what, std::string_view text);

// --ranks-filter: "0,3-5": ranks and inclusive ranges of ranks (0..kMaxRank), comma-separated.
inline constexpr int kMaxRank = 1'000'000;
std::vector<RankRange> parse_rank_ranges(std::string_view what, std::string_view text);

// HVDRUN/horovodrun/spdlog level names, any case -> spdlog's name.
std::string parse_log_level(std::string_view what, std::string_view text);

// [A-Za-z_][A-Za-z0-9_]*
bool is_env_name(std::string_view name);

// "-x NAME=VALUE" or "-x NAME" (NAME must be set in `environment`).
EnvForward parse_env_forward(std::string_view text,
                             const std::map<std::string, std::string>& environment);

// Appends the comma-separated interface names of `text` to `out` (no duplicates).
void add_interfaces(std::vector<std::string>& out, std::string_view what, std::string_view text);

// "yes", "accept-new" or "no", returned as given.
std::string parse_host_key_check(std::string_view what, std::string_view text);

// A rendezvous address: an IPv4 or IPv6 literal (brackets allowed) or a host name.
std::string parse_rendezvous_addr(std::string_view what, std::string_view text);

}  // namespace hvdrun::launcher
