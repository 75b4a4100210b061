// RankQueries (rank_queries.h).
#include "launcher/horovod/rank_queries.h"

namespace hvdrun::launcher::horovod {
namespace {

// "<host>:<local_rank>" -> "<host>" (a host name may hold ':' itself).
std::string host_of(const std::string& name) {
  const auto colon = name.rfind(':');
  return colon == std::string::npos ? name : name.substr(0, colon);
}

}  // namespace

void RankQueries::registered(const std::string& name) {
  registered_.insert(name);
  // A survivor that registers after its generation was formed is awaited too, unless it asked.
  if (const auto it = pending_.find(name); it != pending_.end() && !it->second.asked) {
    awaited_.insert(name);
  }
}

void RankQueries::next_generation(const std::map<std::string, Slot>& survivors, int size) {
  // The name in the ended generation of each survivor that never asked there -> the name it
  // still goes by.
  std::map<std::string, std::string> still_called;
  for (const auto& [name, answer] : pending_) {
    still_called[host_of(name) + ":" + std::to_string(answer.local_rank)] = name;
  }
  pending_.clear();
  std::map<std::string, Answer> older;
  for (const auto& [name, slot] : survivors) {
    Answer answer{std::to_string(slot.rank) + "," + std::to_string(size) + "," +
                      std::to_string(slot.local_rank) + "," + std::to_string(slot.local_size) +
                      "," + std::to_string(slot.cross_rank) + "," + std::to_string(slot.cross_size),
                  slot.local_rank};
    const auto it = still_called.find(name);
    if (it == still_called.end()) {
      pending_.emplace(name, std::move(answer));
    } else {
      older.emplace(it->second, std::move(answer));
    }
  }
  // A name both a current survivor and a slow one go by is the current one's.
  for (auto& [name, answer] : older) pending_.emplace(name, std::move(answer));
  awaited_.clear();
  std::set<std::string> still_registered;
  for (const auto& [name, answer] : pending_) {
    if (registered_.contains(name)) {
      awaited_.insert(name);
      still_registered.insert(name);
    }
  }
  registered_ = std::move(still_registered);  // the dead and the left-out ask no more
  given_.clear();
}

bool RankQueries::all_registered_among(const std::set<std::string>& waiting) const {
  if (registered_.empty()) return false;
  for (const auto& name : registered_) {
    if (!waiting.contains(name)) return false;
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> RankQueries::ask(
    const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const auto it = pending_.find(name);
    if (it == pending_.end()) continue;
    it->second.asked = true;
    awaited_.erase(name);
  }
  if (!awaited_.empty()) return {};
  return release();
}

std::vector<std::pair<std::string, std::string>> RankQueries::release() {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> renamed;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!it->second.asked) {
      ++it;
      continue;
    }
    // Its old name goes, unless an earlier release of this generation gave it to another.
    if (!given_.contains(it->first)) registered_.erase(it->first);
    renamed.push_back(host_of(it->first) + ":" + std::to_string(it->second.local_rank));
    out.emplace_back(it->first, std::move(it->second.text));
    it = pending_.erase(it);
  }
  for (auto& name : renamed) {
    registered_.insert(name);
    given_.insert(std::move(name));
  }
  return out;
}

}  // namespace hvdrun::launcher::horovod
