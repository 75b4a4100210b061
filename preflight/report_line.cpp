// A probe's report line (report_line.h).
#include "preflight/report_line.h"

#include <cstdio>
#include <cstdlib>

namespace hvdrun::preflight {
namespace {

std::string encoded(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '%' || c == ' ' || c == '=' || c == '\n' || c == '\t') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out.empty() ? "-" : out;
}

std::string decoded(std::string_view text) {
  if (text == "-") return {};
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out +=
          static_cast<char>(std::strtol(std::string(text.substr(i + 1, 2)).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string report_field(std::string_view key, std::string_view value) {
  return " " + std::string(key) + "=" + encoded(value);
}

Report read_report(std::string_view line) {
  Report out;
  if (!line.starts_with(kReportMarker)) return out;
  line.remove_prefix(kReportMarker.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  while (!line.empty()) {
    const auto space = line.find(' ');
    const std::string_view item = line.substr(0, space);
    if (const auto eq = item.find('='); eq != std::string_view::npos && eq > 0) {
      out[std::string(item.substr(0, eq))] = decoded(item.substr(eq + 1));
    }
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
  }
  return out;
}

}  // namespace hvdrun::preflight
