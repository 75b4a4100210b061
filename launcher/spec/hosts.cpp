// Host lists from -H and host files: [user@]host[:slots], [ipv6][:slots], and Open MPI style
// host-file lines. Every error is one line naming the origin (-H or FILE:LINE) and the entry.
#include "launcher/spec/hosts.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <unordered_map>

#include "common/ascii_case.h"
#include "hvdrun/error.h"
#include "launcher/spec/user_file.h"

namespace hvdrun::launcher {
namespace {

constexpr std::string_view kSpace = " \t\r\n\f\v";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

// "ORIGIN: WHAT in 'CONTEXT'" (no " in ..." when the context is what was already named).
[[noreturn]] void fail(const std::string& origin, const std::string& what,
                       std::string_view context) {
  throw UsageError(origin + ": " + what + (context.empty() ? "" : " in " + quoted(context)));
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// Letters, digits, '.', '-', '_'; not starting with '-' (it would read as an ssh option).
bool is_valid_name(std::string_view name) {
  return !name.empty() && name.front() != '-' &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

bool is_valid_ipv6(std::string_view text) {
  const auto zone = text.find('%');
  if (zone != std::string_view::npos && !is_valid_name(text.substr(zone + 1))) return false;
  const std::string address(text.substr(0, zone));
  in6_addr parsed{};
  return inet_pton(AF_INET6, address.c_str(), &parsed) == 1;
}

int parse_slots(std::string_view text, const std::string& origin, std::string_view context) {
  int slots = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, slots);
  const bool digits_only = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!digits_only) fail(origin, "bad slot count " + quoted(text), context);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && slots > kMaxSlots)) {
    fail(origin,
         "slot count " + std::string(text) + " too large (at most " + std::to_string(kMaxSlots) +
             ")",
         context);
  }
  if (ec != std::errc{} || ptr != end) fail(origin, "bad slot count " + quoted(text), context);
  if (slots < 1) fail(origin, "bad slot count " + quoted(text) + " (must be at least 1)", context);
  return slots;
}

struct EntryParts {
  std::string user;
  std::string name;
  std::optional<std::string_view> slots;
};

// "[user@]host[:slots]" or "[user@][v6addr][:slots]".
EntryParts split_entry(std::string_view entry, const std::string& origin,
                       std::string_view context) {
  EntryParts parts;
  std::string_view rest = entry;
  if (const auto at = entry.find('@'); at != std::string_view::npos) {
    parts.user = entry.substr(0, at);
    rest = entry.substr(at + 1);
    if (!is_valid_name(parts.user)) fail(origin, "bad user name " + quoted(parts.user), context);
  }
  if (rest.starts_with('[')) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) fail(origin, "missing ']' after IPv6 address", context);
    parts.name = rest.substr(1, close - 1);
    if (!is_valid_ipv6(parts.name)) fail(origin, "bad IPv6 address " + quoted(parts.name), context);
    const auto after = rest.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      fail(origin, "unexpected " + quoted(after) + " after ']'", context);
    }
    if (!after.empty()) parts.slots = after.substr(1);
    return parts;
  }
  const auto colon = rest.find(':');
  if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
    fail(origin,
         "IPv6 address " + quoted(rest) + " must be written in brackets, as [" + std::string(rest) +
             "] or [" + std::string(rest) + "]:slots",
         rest == context ? std::string_view() : context);
  }
  parts.name = rest.substr(0, colon);
  if (!is_valid_name(parts.name)) {
    fail(origin,
         "bad host name " + quoted(parts.name) + " (letters, digits, '.', '-', '_' allowed)",
         context);
  }
  if (colon != std::string_view::npos) parts.slots = rest.substr(colon + 1);
  return parts;
}

// Hosts in the order given, each name once (case-insensitive; a hash index keeps a list of
// 100,000 hosts linear).
class HostList {
 public:
  // `identical_ok`: an entry that repeats an earlier one exactly (user, name and slots) is
  // dropped instead of refused.
  void add(HostSpec host, std::string_view context, bool identical_ok = false) {
    const auto [it, inserted] = index_.emplace(ascii_lower(host.name), hosts_.size());
    if (!inserted) {
      const HostSpec& same = hosts_[it->second];
      if (identical_ok && same.user == host.user && same.slots == host.slots) return;
      std::string what = "host " + quoted(host.name) + " listed twice";
      if (same.origin != host.origin) what += " (first at " + same.origin + ")";
      throw UsageError(host.origin + ": " + what + " in " + quoted(context) +
                       "; list each host once with its total slots");
    }
    hosts_.push_back(std::move(host));
  }
  bool empty() const noexcept { return hosts_.empty(); }
  std::vector<HostSpec> take() { return std::move(hosts_); }

 private:
  std::vector<HostSpec> hosts_;
  std::unordered_map<std::string, std::size_t> index_;
};

// One host-file line without its comment: "entry [slots=N] [max_slots=M]".
HostSpec parse_line(std::string_view line, const std::string& origin,
                    std::vector<std::string>& notes) {
  // Tolerate "slots = 4" by gluing '=' to its neighbours.
  std::string glued;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '=') {
      while (!glued.empty() && (glued.back() == ' ' || glued.back() == '\t')) glued.pop_back();
      glued += '=';
      while (i + 1 < line.size() && (line[i + 1] == ' ' || line[i + 1] == '\t')) ++i;
    } else {
      glued += line[i];
    }
  }
  std::vector<std::string_view> tokens;
  for (std::size_t pos = 0; pos < glued.size();) {
    const auto start = glued.find_first_not_of(" \t", pos);
    if (start == std::string::npos) break;
    const auto end = std::min(glued.find_first_of(" \t", start), glued.size());
    tokens.push_back(std::string_view(glued).substr(start, end - start));
    pos = end;
  }
  auto parts = split_entry(tokens.front(), origin, line);
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    const auto eq = tokens[i].find('=');
    const auto key = ascii_lower(tokens[i].substr(0, eq));
    if (eq != std::string_view::npos && key == "slots") {
      if (parts.slots) fail(origin, "slot count given twice", line);
      parts.slots = tokens[i].substr(eq + 1);
    } else if (eq != std::string_view::npos && (key == "max_slots" || key == "max-slots")) {
      notes.push_back(origin + ": max_slots ignored");
    } else {
      fail(origin, "unknown token " + quoted(tokens[i]) + " (expected slots=N or max_slots=N)",
           line);
    }
  }
  HostSpec host{std::move(parts.user), std::move(parts.name), 1, origin};
  if (parts.slots) host.slots = parse_slots(*parts.slots, origin, line);
  return host;
}

// Calls fn(line, number) for each line of `text` (a leading UTF-8 byte-order mark skipped)
// without its # comment and surrounding whitespace, skipping lines left empty.
template <class Fn>
void for_each_line(std::string_view text, Fn fn) {
  int line_number = 0;
  std::size_t pos = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (pos < text.size()) {
    const auto newline = std::min(text.find('\n', pos), text.size());
    auto line = text.substr(pos, newline - pos);
    pos = newline + 1;
    ++line_number;
    line = trim(line.substr(0, line.find('#')));
    if (!line.empty()) fn(line, line_number);
  }
}

}  // namespace

std::string quoted(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::size_t whole = text.size();
  if (whole > kQuotedMost) text = text.substr(0, kQuotedMost);
  std::string out = "'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  if (whole > kQuotedMost) return out + "...' (" + std::to_string(whole) + " bytes)";
  return out + "'";
}

int total_slots(const std::vector<HostSpec>& hosts) {
  long long total = 0;
  for (const auto& host : hosts)
    total = std::min<long long>(total + std::max(host.slots, 0), kMaxSlots);
  return static_cast<int>(total);
}

std::vector<HostSpec> parse_hosts_flag(std::string_view text) {
  const std::string origin = "-H";
  if (trim(text).empty()) throw UsageError("-H " + quoted(text) + ": no hosts given");
  HostList hosts;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = std::min(text.find(',', pos), text.size());
    const auto item = trim(text.substr(pos, comma - pos));
    if (item.empty()) throw UsageError("-H: empty host entry in " + quoted(text));
    auto parts = split_entry(item, origin, item);
    HostSpec host{std::move(parts.user), std::move(parts.name), 1, origin};
    if (parts.slots) host.slots = parse_slots(*parts.slots, origin, item);
    hosts.add(std::move(host), text);
    pos = comma + 1;
  }
  return hosts.take();
}

std::vector<HostSpec> parse_hostfile_text(std::string_view text, const std::string& path,
                                          std::vector<std::string>& notes) {
  HostList hosts;
  for_each_line(text, [&](std::string_view line, int line_number) {
    const auto origin = path + ":" + std::to_string(line_number);
    hosts.add(parse_line(line, origin, notes), line);
  });
  if (hosts.empty()) throw UsageError("host file " + quoted(path) + " lists no hosts");
  return hosts.take();
}

std::vector<HostSpec> parse_discovery_output(std::string_view text, const std::string& script,
                                             std::optional<int> slots_per_host) {
  HostList hosts;
  for_each_line(text, [&](std::string_view line, int line_number) {
    const auto origin =
        "discovery script " + quoted(script) + " line " + std::to_string(line_number);
    if (line.find_first_of(kSpace) != std::string_view::npos) {
      fail(origin, "expected host or host:slots", line);
    }
    auto parts = split_entry(line, origin, line);
    HostSpec host{std::move(parts.user), std::move(parts.name), slots_per_host.value_or(1), origin};
    if (parts.slots) host.slots = parse_slots(*parts.slots, origin, line);
    hosts.add(std::move(host), line, true);
  });
  return hosts.take();
}

std::vector<HostSpec> parse_hostfile(const std::string& path, std::vector<std::string>& notes) {
  return parse_hostfile_text(read_user_file(path, "host file " + quoted(path)), path, notes);
}

}  // namespace hvdrun::launcher
