// StragglerWatch (straggler_watch.h).
#include "launcher/forensics/straggler_watch.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace hvdrun::launcher {

void StragglerWatch::add(const CollectiveGroup& group) {
  if (!group.complete || group.members.size() < 2) return;
  const std::uint32_t generation = group.members.front().generation;
  if (generation < generation_) return;  // a late sample of an earlier generation
  if (generation > generation_) {
    generation_ = generation;
    window_.clear();
  }
  const auto last =
      std::min_element(group.members.begin(), group.members.end(),
                       [](const auto& a, const auto& b) { return a.inside_us < b.inside_us; });
  const auto first =
      std::max_element(group.members.begin(), group.members.end(),
                       [](const auto& a, const auto& b) { return a.inside_us < b.inside_us; });
  window_.push_back({last->worker, last->rank, last->host, first->inside_us - last->inside_us});
  if (window_.size() > kWindow) window_.pop_front();
}

void StragglerWatch::start_after(std::uint32_t generation) {
  generation_ = generation + 1;
  window_.clear();
}

std::optional<StragglerWatch::Verdict> StragglerWatch::verdict() const {
  if (window_.size() < kWindow) return std::nullopt;
  std::map<std::uint32_t, std::size_t> last_counts;
  for (const Entry& e : window_) ++last_counts[e.last_worker];
  const auto most =
      std::max_element(last_counts.begin(), last_counts.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (static_cast<double>(most->second) < kLastShare * static_cast<double>(kWindow)) {
    return std::nullopt;
  }
  // Its lateness over the whole window (0 where it was not last): a worker late in most
  // collectives by the margin has a median at least that.
  std::vector<std::uint32_t> lateness;
  Verdict v;
  for (const Entry& e : window_) {
    lateness.push_back(e.last_worker == most->first ? e.lateness_us : 0);
    if (e.last_worker == most->first) {
      v.rank = e.rank;
      v.host = e.host;
    }
  }
  std::nth_element(lateness.begin(), lateness.begin() + lateness.size() / 2, lateness.end());
  v.median_lateness = std::chrono::microseconds(lateness[lateness.size() / 2]);
  if (v.median_lateness < margin_) return std::nullopt;
  v.worker = most->first;
  v.last = most->second;
  return v;
}

std::string StragglerWatch::Verdict::describe() const {
  char late[32];
  std::snprintf(late, sizeof late, "%.1f ms", static_cast<double>(median_lateness.count()) / 1000);
  return "rank " + std::to_string(rank) + " (host " + host + ") arrived last in " +
         std::to_string(last) + " of the last " + std::to_string(kWindow) +
         " collectives timed on every rank, late by " + late + " at the median";
}

}  // namespace hvdrun::launcher
