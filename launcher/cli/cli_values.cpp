// Value parsers of hvdrun's command line (cli_values.h).
#include "launcher/cli/cli_values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <csignal>
#include <utility>

#include "common/ascii_case.h"
#include "hvdrun/error.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {

int parse_count(std::string_view what, std::string_view text, int max, std::string_view meaning,
                int min) {
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const auto shown = std::string(what) + " " + std::string(text);
  if (ptr != text.data() + text.size() ||
      (ec != std::errc{} && ec != std::errc::result_out_of_range)) {
    throw UsageError(std::string(what) + " " + quoted(text) + ": " + std::string(meaning) +
                     " must be a whole number");
  }
  if (ec == std::errc::result_out_of_range ? !text.starts_with('-') : value > max) {
    throw UsageError(shown + ": too large (at most " + std::to_string(max) + ")");
  }
  if (ec == std::errc::result_out_of_range || value < min) {
    throw UsageError(shown + ": " + std::string(meaning) + " must be at least " +
                     std::to_string(min));
  }
  return static_cast<int>(value);
}

std::chrono::milliseconds parse_grace(std::string_view what, std::string_view text) {
  double seconds = 0;
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), seconds, std::chars_format::fixed);
  if (ec != std::errc{} || ptr != text.data() + text.size() || !std::isfinite(seconds)) {
    throw UsageError(std::string(what) + " " + quoted(text) + ": expected seconds, e.g. 5 or 0.5");
  }
  if (seconds < 0 || seconds > kMaxGracePeriod) {
    throw UsageError(std::string(what) + " " + std::string(text) + ": must be between 0 and " +
                     std::to_string(static_cast<int>(kMaxGracePeriod)) + " seconds");
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

std::vector<int> parse_forwarded_signals(std::string_view what, std::string_view text) {
  static constexpr std::pair<std::string_view, int> kForwardable[] = {
      {"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
  std::string upper(text);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::vector<int> out;
  if (upper == "NONE") return out;
  std::size_t start = 0;  // the same offsets in `text` and `upper`
  while (true) {
    const auto comma = upper.find(',', start);
    const auto length = comma == std::string::npos ? std::string::npos : comma - start;
    std::string_view name = std::string_view(upper).substr(start, length);
    if (name.starts_with("SIG")) name.remove_prefix(3);
    const auto* found = std::find_if(std::begin(kForwardable), std::end(kForwardable),
                                     [&](const auto& entry) { return entry.first == name; });
    const std::string item(text.substr(start, length));
    if (found == std::end(kForwardable)) {
      throw UsageError(std::string(what) + " " + quoted(text) + ": " + quoted(item) +
                       " is not one of HUP, INT, QUIT, USR1, USR2 (or none)");
    }
    if (std::find(out.begin(), out.end(), found->second) != out.end()) {
      throw UsageError(std::string(what) + " " + quoted(text) + ": " + quoted(item) +
                       " given twice");
    }
    out.push_back(found->second);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

OutputPrefix parse_output_prefix(std::string_view what, std::string_view text) {
  if (text == "rank") return OutputPrefix::kRank;
  if (text == "host-rank") return OutputPrefix::kHostRank;
  if (text == "none") return OutputPrefix::kNone;
  throw UsageError(std::string(what) + " " + quoted(text) + ": expected rank, host-rank or none");
}

std::vector<RankRange> parse_rank_ranges(std::string_view what, std::string_view text) {
  std::vector<RankRange> out;
  const auto fail = [&](std::string_view item, const std::string& why) -> UsageError {
    return UsageError(std::string(what) + " " + quoted(text) + ": " + quoted(item) + " " + why);
  };
  const auto rank_of = [&](std::string_view item, std::string_view number) {
    int value = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc{} || ptr != number.data() + number.size() || value < 0 ||
        value > kMaxRank) {
      throw fail(item, "is not a rank or a range of ranks (0.." + std::to_string(kMaxRank) + ")");
    }
    return value;
  };
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const auto item = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const auto dash = item.find('-');
    RankRange range;
    range.first = rank_of(item, item.substr(0, dash));
    range.last =
        dash == std::string_view::npos ? range.first : rank_of(item, item.substr(dash + 1));
    if (range.last < range.first) throw fail(item, "ends below its start");
    out.push_back(range);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// HVDRUN/horovodrun/spdlog level names, any case -> spdlog's name.
std::string parse_log_level(std::string_view what, std::string_view text) {
  const std::string lower = ascii_lower(text);
  static const std::map<std::string, std::string, std::less<>> kLevels = {
      {"trace", "trace"},       {"debug", "debug"}, {"info", "info"}, {"warn", "warn"},
      {"warning", "warn"},      {"error", "error"}, {"err", "error"}, {"fatal", "critical"},
      {"critical", "critical"}, {"off", "off"}};
  if (const auto it = kLevels.find(lower); it != kLevels.end()) return it->second;
  throw UsageError(std::string(what) + " " + quoted(text) +
                   ": expected trace, debug, info, warn, error, critical or off "
                   "(or TRACE, DEBUG, INFO, WARNING, ERROR, FATAL)");
}

bool is_env_name(std::string_view name) {
  const auto ok = [](char c, bool first) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
  };
  if (name.empty() || !ok(name.front(), true)) return false;
  for (const char c : name.substr(1)) {
    if (!ok(c, false)) return false;
  }
  return true;
}

EnvForward parse_env_forward(std::string_view text,
                             const std::map<std::string, std::string>& environment) {
  const auto eq = text.find('=');
  EnvForward entry{std::string(text.substr(0, eq)), std::nullopt};
  if (!is_env_name(entry.name)) {
    throw UsageError("-x " + quoted(text) + ": " + quoted(entry.name) +
                     " is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
  }
  if (eq != std::string_view::npos) {
    entry.value = std::string(text.substr(eq + 1));
  } else if (!environment.contains(entry.name)) {
    throw UsageError("-x " + entry.name + ": " + entry.name +
                     " is not set in hvdrun's environment (use -x " + entry.name + "=VALUE)");
  }
  return entry;
}

void add_interfaces(std::vector<std::string>& out, std::string_view what, std::string_view text) {
  std::size_t pos = 0;
  bool any = false;
  while (pos <= text.size()) {
    const auto comma = std::min(text.find(',', pos), text.size());
    auto item = text.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      any = true;
      if (std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
    }
    pos = comma + 1;
  }
  if (!any) throw UsageError(std::string(what) + " " + quoted(text) + ": no interface named");
}

std::string parse_host_key_check(std::string_view what, std::string_view text) {
  if (text == "yes" || text == "accept-new" || text == "no") return std::string(text);
  throw UsageError(std::string(what) + " " + quoted(text) +
                   ": expected yes (known hosts only), accept-new (add unknown hosts, refuse "
                   "changed keys) or no (no check)");
}

std::string parse_rendezvous_addr(std::string_view what, std::string_view text) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  const bool ok = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
           c == '%' || c == '_';
  });
  if (!ok) {
    throw UsageError(std::string(what) + " " + quoted(text) +
                     ": expected an address (10.0.0.1, fd00::1) or a host name, without port");
  }
  return std::string(text);
}

}  // namespace hvdrun::launcher
