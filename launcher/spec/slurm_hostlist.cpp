// Slurm host lists and task counts (slurm_hostlist.h).
#include "launcher/spec/slurm_hostlist.h"

#include <charconv>
#include <functional>

#include "hvdrun/error.h"

namespace hvdrun::launcher {
namespace {

constexpr unsigned long kMaxNumber = 999'999'999;  // a bracket number, at most 9 digits

[[noreturn]] void bad(std::string_view list, const std::string& what) {
  const std::string shown(list.substr(0, 200));
  throw UsageError("bad Slurm host list '" + shown + (list.size() > 200 ? "...'" : "'") + ": " +
                   what);
}

bool all_digits(std::string_view text) {
  if (text.empty() || text.size() > 9) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

unsigned long number(std::string_view text) {
  unsigned long value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::string padded(unsigned long value, std::size_t width) {
  std::string text = std::to_string(value);
  if (text.size() < width) text.insert(0, width - text.size(), '0');
  return text;
}

// Calls `f` with each comma-separated item of `text`, empty ones too ("a,,b": 3 items).
void for_each_item(std::string_view text, const std::function<void(std::string_view)>& f) {
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    f(text.substr(start, comma - start));
    start = comma + 1;
  }
}

// The names of one bracket group's body ("01-03,7"), in order.
std::vector<std::string> group_values(std::string_view list, std::string_view body,
                                      std::size_t max_hosts) {
  if (body.empty()) bad(list, "an empty bracket group []");
  std::vector<std::string> out;
  for_each_item(body, [&](std::string_view item) {
    const std::size_t dash = item.find('-');
    const std::string_view lo = item.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi)) {
      bad(list, "'" + std::string(item) + "' in brackets is not a number or a range lo-hi");
    }
    const unsigned long from = number(lo), to = number(hi);
    if (to < from) bad(list, "the range '" + std::string(item) + "' goes down");
    if (to - from >= max_hosts || out.size() + (to - from + 1) > max_hosts) {
      bad(list, "it names more than " + std::to_string(max_hosts) + " hosts");
    }
    for (unsigned long v = from; v <= to && v <= kMaxNumber; ++v)
      out.push_back(padded(v, lo.size()));
  });
  return out;
}

// One entry ("r[1-2]n[08-10]-ib") appended to `out`.
void expand_entry(std::string_view list, std::string_view entry, std::size_t max_hosts,
                  std::vector<std::string>& out) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  while (i < entry.size()) {
    const std::size_t open = entry.find('[', i);
    const std::size_t close_before = entry.find(']', i);
    if (close_before < open) bad(list, "a ']' without its '['");
    const std::string_view text =
        entry.substr(i, open == std::string_view::npos ? entry.npos : open - i);
    for (auto& name : names) name += text;
    if (open == std::string_view::npos) break;
    const std::size_t close = entry.find(']', open);
    if (close == std::string_view::npos) bad(list, "a '[' without its ']'");
    const std::string_view body = entry.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string_view::npos) bad(list, "a '[' inside brackets");
    const auto values = group_values(list, body, max_hosts);
    if (names.size() * values.size() + out.size() > max_hosts) {
      bad(list, "it names more than " + std::to_string(max_hosts) + " hosts");
    }
    std::vector<std::string> product;
    product.reserve(names.size() * values.size());
    for (const auto& name : names) {
      for (const auto& value : values) product.push_back(name + value);
    }
    names = std::move(product);
    i = close + 1;
  }
  for (auto& name : names) {
    if (name.empty()) bad(list, "an empty host name");
    out.push_back(std::move(name));
  }
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(std::string_view list, std::size_t max_hosts) {
  std::vector<std::string> out;
  std::size_t start = 0, depth = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == '{' || c == '}' || c == ' ' || c == '\t' || c == '\n') {
      bad(list, "'" + std::string(1, c) + "' is not part of a host list this parser reads");
    }
    if (c != ',' || (depth > 0 && i < list.size())) continue;
    const std::string_view entry = list.substr(start, i - start);
    if (!entry.empty()) expand_entry(list, entry, max_hosts, out);  // "a,,b": as Slurm, skipped
    start = i + 1;
  }
  if (out.empty()) bad(list, "it names no host");
  return out;
}

std::vector<int> expand_slurm_tasks_per_node(std::string_view value, std::size_t max_nodes) {
  const auto fail = [&](const std::string& what) {
    throw UsageError("bad Slurm task counts '" + std::string(value.substr(0, 200)) + "': " + what);
  };
  std::vector<int> out;
  for_each_item(value, [&](std::string_view item) {
    const std::size_t paren = item.find('(');
    const std::string_view count = item.substr(0, paren);
    std::string_view repeat = "1";
    if (paren != std::string_view::npos) {
      if (item.size() < paren + 4 || item.substr(paren, 2) != "(x" || item.back() != ')') {
        fail("'" + std::string(item) + "' is not N or N(xK)");
      }
      repeat = item.substr(paren + 2, item.size() - paren - 3);
    }
    if (!all_digits(count) || !all_digits(repeat) || number(count) == 0 || number(repeat) == 0) {
      fail("'" + std::string(item) + "' is not N or N(xK) with N, K > 0");
    }
    if (out.size() + number(repeat) > max_nodes) {
      fail("more than " + std::to_string(max_nodes) + " nodes");
    }
    out.insert(out.end(), number(repeat), static_cast<int>(number(count)));
  });
  return out;
}

}  // namespace hvdrun::launcher
