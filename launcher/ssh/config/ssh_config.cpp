// ~/.ssh/config lookup for HostName, Port, User and IdentityFile (ssh_config.h).
#include "launcher/ssh/config/ssh_config.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "common/ascii_case.h"
#include "hvdrun/error.h"

namespace hvdrun::launcher::ssh {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// "Keyword value", "Keyword=value", "Keyword = value"; a double-quoted value loses its quotes.
std::pair<std::string, std::string> split_line(std::string_view line) {
  line = trim(line);
  const auto end = line.find_first_of(" \t=");
  if (end == std::string_view::npos) return {ascii_lower(line), ""};
  std::string_view value = trim(line.substr(end));
  if (!value.empty() && value.front() == '=') value = trim(value.substr(1));
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  return {ascii_lower(line.substr(0, end)), std::string(value)};
}

// %h -> host, %% -> %, leading ~/ -> home.
std::string expand(const std::string& value, const std::string& host, const std::string& home) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 1 < value.size() && (value[i + 1] == 'h' || value[i + 1] == '%')) {
      out += value[i + 1] == 'h' ? host : "%";
      ++i;
    } else {
      out += value[i];
    }
  }
  if (out == "~" || out.starts_with("~/")) out = home + out.substr(1);
  return out;
}

int parse_port(const std::string& value, const std::string& origin, int line) {
  int port = 0;
  for (const char c : value) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535) {
      port = -1;
      break;
    }
    port = port * 10 + (c - '0');
  }
  if (value.empty() || port < 1 || port > 65535) {
    throw UsageError(origin + ":" + std::to_string(line) + ": bad Port '" + value +
                     "' (expected 1..65535)");
  }
  return port;
}

}  // namespace

bool ssh_host_matches(std::string_view patterns, const std::string& host) {
  std::istringstream words{std::string(patterns)};
  std::string pattern;
  bool matched = false;
  while (words >> pattern) {
    const bool negated = pattern.starts_with('!');
    if (negated) pattern.erase(0, 1);
    if (::fnmatch(ascii_lower(pattern).c_str(), ascii_lower(host).c_str(), 0) == 0) {
      if (negated) return false;  // a negated match excludes the block whatever else matches
      matched = true;
    }
  }
  return matched;
}

SshConfigEntry lookup_ssh_config(std::string_view text, const std::string& host,
                                 const std::string& home_dir, const std::string& origin) {
  SshConfigEntry entry;
  bool active = true;  // settings before the first Host line apply to every host
  std::istringstream lines{std::string(text)};
  std::string raw;
  int line_number = 0;
  while (std::getline(lines, raw)) {
    ++line_number;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto [keyword, value] = split_line(line);
    if (keyword == "host") {
      active = ssh_host_matches(value, host);
    } else if (keyword == "match") {
      active = false;
    } else if (!active) {
      continue;
    } else if (keyword == "hostname" && !entry.host_name) {
      entry.host_name = expand(value, host, home_dir);
    } else if (keyword == "port" && !entry.port) {
      entry.port = parse_port(value, origin, line_number);
    } else if (keyword == "user" && !entry.user) {
      entry.user = value;
    } else if (keyword == "identityfile" && !value.empty()) {
      entry.identity_files.push_back(expand(value, host, home_dir));
    }
  }
  return entry;
}

SshConfigEntry read_ssh_config(const std::string& path, const std::string& host,
                               const std::string& home_dir) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  std::string origin = path;
  if (!home_dir.empty() && origin.starts_with(home_dir + "/")) {
    origin = "~" + origin.substr(home_dir.size());
  }
  return lookup_ssh_config(text.str(), host, home_dir, origin);
}

}  // namespace hvdrun::launcher::ssh
