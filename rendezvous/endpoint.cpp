// Endpoint::parse: "host:port" and "[v6addr]:port" rendezvous addresses.
#include <charconv>

#include "hvdrun/error.h"
#include "rendezvous/client.h"

namespace hvdrun::rdzv {
namespace {

[[noreturn]] void bad(std::string_view text, std::string_view why) {
  throw UsageError("bad rendezvous address '" + std::string(text) + "': " + std::string(why) +
                   " (expected host:port or [v6addr]:port)");
}

}  // namespace

Endpoint Endpoint::parse(std::string_view text) {
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) bad(text, "missing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') bad(text, "missing ':port'");
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) bad(text, "missing ':port'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) bad(text, "an IPv6 address needs brackets");
  }
  if (host.empty()) bad(text, "empty host");
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    bad(text, "port '" + std::string(port) + "' is not a number in 1..65535");
  }
  return Endpoint{std::string(host), static_cast<std::uint16_t>(value)};
}

}  // namespace hvdrun::rdzv
