// Named, generation-scoped, reusable barriers of the rendezvous.
#include "rendezvous/barrier_set.h"

#include <algorithm>

namespace hvdrun::rdzv {

BarrierSet::Entered BarrierSet::enter(std::shared_ptr<Wait> wait, std::uint32_t slot,
                                      std::size_t size) {
  Entered result;
  Key key{wait->generation, wait->key};
  auto& p = pending_[key];
  if (p.in.size() < size) p.in.resize(size);
  if (slot < p.in.size() && p.in[slot]) {
    result.duplicate = true;
    return result;
  }
  if (slot < p.in.size()) p.in[slot] = true;
  p.waiters.emplace_back(slot, std::move(wait));
  if (p.waiters.size() >= size) {
    result.released.reserve(p.waiters.size());
    for (auto& w : p.waiters) result.released.push_back(std::move(w.second));
    pending_.erase(key);
  }
  return result;
}

void BarrierSet::remove(const Wait& wait) {
  auto it = pending_.find(Key{wait.generation, wait.key});
  if (it == pending_.end()) return;
  auto& p = it->second;
  for (const auto& w : p.waiters) {
    if (w.second.get() == &wait && w.first < p.in.size()) p.in[w.first] = false;
  }
  std::erase_if(p.waiters, [&wait](const auto& w) { return w.second.get() == &wait; });
  if (it->second.waiters.empty()) pending_.erase(it);
}

std::vector<bool> BarrierSet::entered(const Wait& wait, std::size_t size) const {
  std::vector<bool> out(size);
  auto it = pending_.find(Key{wait.generation, wait.key});
  if (it == pending_.end()) return out;
  for (std::size_t i = 0; i < size && i < it->second.in.size(); ++i) out[i] = it->second.in[i];
  return out;
}

}  // namespace hvdrun::rdzv
