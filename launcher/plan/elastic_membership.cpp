// ElasticMembership (elastic_membership.h): cooldowns, replacements, next generation's ranks.
#include "launcher/plan/elastic_membership.h"

#include <algorithm>
#include <set>

namespace hvdrun::launcher {

ElasticMembership::ElasticMembership(const std::vector<HostSpec>& hosts, int max_np,
                                     std::chrono::seconds cooldown_min,
                                     std::chrono::seconds cooldown_max)
    : max_np_(static_cast<std::size_t>(max_np)),
      cooldown_min_(cooldown_min),
      cooldown_max_(cooldown_max) {
  for (const auto& h : hosts) {
    by_name_.emplace(h.name, hosts_.size());
    hosts_.push_back(Host{h.name, h.slots, 0, {}, {}});
  }
}

void ElasticMembership::add(WorkerId id, std::uint32_t key, int rank) {
  workers_.insert_or_assign(key, Worker{id, key, rank});
  auto& count = hosts_.at(id.host).incarnations[id.slot];
  count = std::max(count, id.incarnation + 1);
  next_key_ = std::max(next_key_, key + 1);
}

bool ElasticMembership::remove(std::uint32_t key) {
  return workers_.erase(key) + spares_.erase(key) > 0;
}

std::chrono::seconds ElasticMembership::cool_down(std::size_t host, Clock::time_point now) {
  Host& h = hosts_.at(host);
  const int doublings = std::min(h.failures++, 16);
  const auto cooldown = std::min(cooldown_max_, cooldown_min_ * (1 << doublings));
  h.usable_from = now + cooldown;
  h.cooling = true;
  return cooldown;
}

std::vector<int> ElasticMembership::used_slots() const {
  std::vector<int> used(hosts_.size(), 0);
  for (const auto& [key, w] : workers_) ++used[w.id.host];
  for (const auto& [key, w] : spares_) ++used[w.id.host];
  return used;
}

std::size_t ElasticMembership::open_slots(Clock::time_point now) const {
  const std::vector<int> used = used_slots();
  std::size_t open = 0;
  for (std::size_t h = 0; h < hosts_.size(); ++h) {
    if (usable(hosts_[h], now))
      open += static_cast<std::size_t>(std::max(0, hosts_[h].slots - used[h]));
  }
  return open;
}

std::vector<WorkerId> ElasticMembership::take_open_slots(Clock::time_point now, std::size_t n) {
  std::vector<WorkerId> out;
  std::map<std::size_t, std::set<int>> taken;  // host -> its slots with a member or a spare
  for (const auto& [key, w] : workers_) taken[w.id.host].insert(w.id.slot);
  for (const auto& [key, w] : spares_) taken[w.id.host].insert(w.id.slot);
  for (std::size_t h = 0; h < hosts_.size() && out.size() < n; ++h) {
    Host& host = hosts_[h];
    if (!usable(host, now)) continue;
    const auto it = taken.find(h);
    for (int slot = 0; slot < host.slots && out.size() < n; ++slot) {
      if (it != taken.end() && it->second.contains(slot)) continue;
      out.push_back(WorkerId{h, slot, host.incarnations[slot]++});
    }
  }
  return out;
}

std::size_t ElasticMembership::free_slots(Clock::time_point now) const {
  std::size_t free = open_slots(now);
  for (const auto& [key, w] : spares_) free += hosts_[w.id.host].reachable ? 1 : 0;
  return std::min(free, growth_room());
}

std::vector<ElasticMembership::Worker> ElasticMembership::add_spares(Clock::time_point now,
                                                                     std::size_t want) {
  std::vector<Worker> added;
  // The open slots the job may still grow into, up to --max-np, are not the spares'.
  const std::size_t open = open_slots(now), room = growth_room();
  want = std::min(want, spares_.size() + (open > room ? open - room : 0));
  if (spares_.size() >= want) return added;
  for (const WorkerId& id : take_open_slots(now, want - spares_.size())) {
    added.push_back(spares_.emplace(next_key_, Worker{id, next_key_, -1}).first->second);
    ++next_key_;
  }
  return added;
}

std::vector<ElasticMembership::Worker> ElasticMembership::fill(Clock::time_point now,
                                                               std::size_t limit) {
  limit = std::min(limit, max_np_);
  std::vector<Worker> added;
  // The spares first, oldest first: they run already. A host cooling down keeps its spares
  // (the cooldown holds back new processes there); an unreachable one's are gone.
  for (auto it = spares_.begin(); it != spares_.end() && workers_.size() < limit;) {
    if (!hosts_[it->second.id.host].reachable) {
      ++it;
      continue;
    }
    Worker w = it->second;
    it = spares_.erase(it);
    workers_.emplace(w.key, w);
    w.promoted = true;
    added.push_back(w);
  }
  if (workers_.size() >= limit) return added;
  for (const WorkerId& id : take_open_slots(now, limit - workers_.size())) {
    added.push_back(workers_.emplace(next_key_, Worker{id, next_key_, -1}).first->second);
    ++next_key_;
  }
  return added;
}

std::vector<rdzv::Member> ElasticMembership::next_generation() {
  std::vector<Worker*> order;
  for (auto& [key, w] : workers_) order.push_back(&w);
  // Survivors by previous rank, then newcomers by key; the longest-lived survivor (lowest key)
  // moves to the front.
  std::stable_sort(order.begin(), order.end(), [](const Worker* a, const Worker* b) {
    if ((a->rank < 0) != (b->rank < 0)) return a->rank >= 0;
    return a->rank >= 0 ? a->rank < b->rank : a->key < b->key;
  });
  const auto oldest =
      std::min_element(order.begin(), order.end(), [](const Worker* a, const Worker* b) {
        if ((a->rank < 0) != (b->rank < 0)) return a->rank >= 0;
        return a->key < b->key;
      });
  if (oldest != order.end()) std::rotate(order.begin(), oldest, oldest + 1);

  // Topology: local rank = order among the generation's workers on the host; hosts in order
  // of their first rank (node rank); cross rank = hosts before this one having the local rank.
  std::map<std::size_t, int> local_count;
  for (const Worker* w : order) ++local_count[w->id.host];
  std::map<std::size_t, int> next_local;
  std::vector<int> local_of(order.size());
  int max_local = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    local_of[i] = next_local[order[i]->id.host]++;
    max_local = std::max(max_local, local_of[i] + 1);
  }
  std::vector<int> cross_size(static_cast<std::size_t>(max_local), 0);
  for (const auto& [host, count] : local_count) {
    for (int lr = 0; lr < count; ++lr) ++cross_size[static_cast<std::size_t>(lr)];
  }
  std::map<std::size_t, int> node_of;  // hosts in order of their first rank
  for (const Worker* w : order) node_of.emplace(w->id.host, static_cast<int>(node_of.size()));
  const auto node_count = static_cast<int>(node_of.size());
  std::vector<std::map<std::size_t, int>> cross_of(static_cast<std::size_t>(max_local));
  std::vector<rdzv::Member> members;
  for (std::size_t i = 0; i < order.size(); ++i) {
    Worker& w = *order[i];
    const auto lr = static_cast<std::size_t>(local_of[i]);
    auto& hosts_at = cross_of[lr];
    const int cross_rank = static_cast<int>(hosts_at.size());
    hosts_at.emplace(w.id.host, cross_rank);
    w.rank = static_cast<int>(i);
    members.push_back(rdzv::Member{
        w.key, Slot{w.rank, local_of[i], local_count[w.id.host], cross_rank, cross_size[lr],
                    node_of.at(w.id.host), node_count, w.id.host, hosts_[w.id.host].name}});
  }
  return members;
}

ElasticMembership::HostsChange ElasticMembership::update_hosts(const std::vector<HostSpec>& hosts) {
  HostsChange change;
  std::vector<int> slots(hosts_.size(), 0);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const HostSpec& spec = hosts[i];
    const auto [it, fresh] = by_name_.emplace(spec.name, hosts_.size());
    if (!fresh) {
      slots[it->second] = spec.slots;
      continue;
    }
    change.added.push_back(hosts_.size());
    change.added_from.push_back(i);
    hosts_.push_back(Host{spec.name, 0, 0, {}, {}});
    slots.push_back(spec.slots);
  }
  for (std::size_t h = 0; h < hosts_.size(); ++h) hosts_[h].slots = slots[h];
  std::erase_if(workers_, [&](const auto& entry) {
    const Worker& w = entry.second;
    if (w.id.slot < hosts_[w.id.host].slots) return false;
    change.removed.push_back(w);
    return true;
  });
  std::erase_if(spares_, [&](const auto& entry) {
    const Worker& w = entry.second;
    if (w.id.slot < hosts_[w.id.host].slots) return false;
    change.removed_spares.push_back(w);
    return true;
  });
  return change;
}

void ElasticMembership::set_reachable(std::size_t host, bool reachable) {
  hosts_.at(host).reachable = reachable;
}

std::optional<ElasticMembership::Clock::time_point> ElasticMembership::next_cooldown_end() const {
  std::optional<Clock::time_point> earliest;
  for (const auto& h : hosts_) {
    if (h.cooling && (!earliest || h.usable_from < *earliest)) earliest = h.usable_from;
  }
  return earliest;
}

std::size_t ElasticMembership::end_cooldowns(Clock::time_point now) {
  std::size_t ended = 0;
  for (auto& h : hosts_) {
    if (h.cooling && h.usable_from <= now) {
      h.cooling = false;
      ++ended;
    }
  }
  return ended;
}

}  // namespace hvdrun::launcher
