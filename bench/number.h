// Whole-text decimal integers, for the bench programs' arguments and the lines their
// processes report to each other.
#pragma once

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hvdrun::bench {

// `text` as a decimal integer of at least `min`, nothing else in it; throws
// std::runtime_error naming `what` and the text.
inline long long number(std::string_view text, std::string_view what = "number",
                        long long min = std::numeric_limits<long long>::min()) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min) {
    throw std::runtime_error(std::string(what) + " '" + std::string(text) + "' is not " +
                             (min == 0 ? "a number >= 0" : "a number"));
  }
  return v;
}

}  // namespace hvdrun::bench
