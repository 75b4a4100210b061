// StragglerStats (stragglers.h).
#include "launcher/forensics/stragglers.h"

#include <algorithm>
#include <cstdio>

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kKept = 4096;  // latenesses kept per worker for the percentiles

std::uint32_t percentile(std::vector<std::uint32_t> values, double p) {
  if (values.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

std::string millis(std::uint32_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", us / 1000.0);
  return text;
}

}  // namespace

void StragglerStats::add(const CollectiveGroup& group) {
  for (const auto& s : group.members) {
    auto& row = workers_[s.worker].row;
    row.worker = s.worker;
    row.rank = s.rank;
    row.host = s.host;
  }
  if (!group.complete || group.members.size() < 2) return;
  std::uint32_t longest = 0, shortest = UINT32_MAX;
  std::uint32_t last = 0;
  for (const auto& m : group.members) {
    longest = std::max(longest, m.inside_us);
    if (m.inside_us < shortest) {
      shortest = m.inside_us;
      last = m.worker;
    }
  }
  ++complete_;
  for (const auto& m : group.members) {
    PerWorker& w = workers_[m.worker];
    ++w.row.collectives;
    if (m.worker == last) ++w.row.last;
    const std::uint32_t late = longest - m.inside_us;
    if (w.lateness.size() < kKept) {
      w.lateness.push_back(late);
    } else {
      w.lateness[w.next] = late;
      w.next = (w.next + 1) % kKept;
    }
  }
}

std::vector<StragglerStats::Row> StragglerStats::rows() const {
  std::vector<Row> out;
  for (const auto& [worker, w] : workers_) {
    if (w.row.collectives == 0) continue;
    Row row = w.row;
    row.median_us = percentile(w.lateness, 0.5);
    row.p99_us = percentile(w.lateness, 0.99);
    out.push_back(row);
  }
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
    return a.median_us != b.median_us ? a.median_us > b.median_us : a.last > b.last;
  });
  return out;
}

std::string StragglerStats::describe(std::size_t most) const {
  const auto all = rows();
  if (all.empty()) return "";
  std::string text =
      "stragglers, over " + std::to_string(complete_) + " collectives timed on every rank:";
  for (std::size_t i = 0; i < all.size() && i < most; ++i) {
    const Row& r = all[i];
    text += (i == 0 ? " " : "; ") + std::string("rank ") + std::to_string(r.rank) + " (host " +
            r.host + ") arrived last in " + std::to_string(r.last) + " (" +
            std::to_string(r.last * 100 / r.collectives) + " %), late by " + millis(r.median_us) +
            " median, " + millis(r.p99_us) + " p99";
  }
  if (all.size() > most) {
    text += "; the other " + std::to_string(all.size() - most) + " ranks were less late";
  }
  return text;
}

}  // namespace hvdrun::launcher
