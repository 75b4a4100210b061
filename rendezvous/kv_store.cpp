// Generation-scoped key-value store and its pending gets.
#include "rendezvous/kv_store.h"

#include <algorithm>
#include <functional>

namespace hvdrun::rdzv {

std::size_t KvStore::KeyHash::operator()(const Key& k) const noexcept {
  return std::hash<std::string>{}(k.name) ^ (std::hash<std::uint32_t>{}(k.generation) * 31);
}

std::vector<std::shared_ptr<Wait>> KvStore::set(std::uint32_t generation, const std::string& key,
                                                std::string value) {
  Key k{generation, key};
  if (const auto old = values_.find(k); old != values_.end()) {
    bytes_ -= entry_cost(key, old->second);
  }
  bytes_ += entry_cost(key, value);
  values_.insert_or_assign(k, std::move(value));
  std::vector<std::shared_ptr<Wait>> woken;
  if (auto it = waiters_.find(k); it != waiters_.end()) {
    woken = std::move(it->second);
    waiters_.erase(it);
  }
  return woken;
}

const std::string* KvStore::find(std::uint32_t generation, const std::string& key) const {
  auto it = values_.find(Key{generation, key});
  return it == values_.end() ? nullptr : &it->second;
}

void KvStore::add_waiter(std::shared_ptr<Wait> wait) {
  Key k{wait->generation, wait->key};
  waiters_[std::move(k)].push_back(std::move(wait));
}

std::size_t KvStore::waiting() const noexcept {
  std::size_t count = 0;
  for (const auto& [key, waits] : waiters_) count += waits.size();
  return count;
}

void KvStore::remove_waiter(const Wait& wait) {
  auto it = waiters_.find(Key{wait.generation, wait.key});
  if (it == waiters_.end()) return;
  std::erase_if(it->second, [&wait](const auto& w) { return w.get() == &wait; });
  if (it->second.empty()) waiters_.erase(it);
}

std::string KvStore::refuse_reason(std::uint32_t generation, const std::string& key,
                                   const std::string& value, std::size_t max_bytes,
                                   std::size_t max_keys) const {
  const auto old = values_.find(Key{generation, key});
  const std::size_t freed = old == values_.end() ? 0 : entry_cost(key, old->second);
  const std::size_t after = bytes_ - freed + entry_cost(key, value);
  if (after > max_bytes) {
    return "the key-value store would hold " + std::to_string(after) +
           " bytes, over its limit of " + std::to_string(max_bytes);
  }
  if (old == values_.end() && values_.size() + 1 > max_keys) {
    return "the key-value store holds its limit of " + std::to_string(max_keys) + " keys";
  }
  return {};
}

void KvStore::drop_before(std::uint32_t generation) {
  std::erase_if(values_, [&](const auto& entry) {
    if (entry.first.generation >= generation) return false;
    bytes_ -= entry_cost(entry.first.name, entry.second);
    return true;
  });
  std::erase_if(waiters_, [&](const auto& entry) { return entry.first.generation < generation; });
}

}  // namespace hvdrun::rdzv
