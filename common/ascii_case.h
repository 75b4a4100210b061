// Case folding of ASCII text: host names, flag values, config keys.
#pragma once

#include <string>
#include <string_view>

namespace hvdrun {

// `text` with A-Z as a-z; other bytes as they are (no locale).
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace hvdrun
