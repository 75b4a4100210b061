// KvScopes (kv_scopes.h): Horovod's scope rules and the byte cap. Every operation is one or
// two hash lookups; lookups by string_view allocate nothing.
#include "launcher/horovod/kv_scopes.h"

#include <utility>

namespace hvdrun::launcher::horovod {

std::optional<KvPath> parse_kv_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return std::nullopt;
  target.remove_prefix(1);
  const auto slash = target.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  KvPath path{target.substr(0, slash), target.substr(slash + 1)};
  if (path.scope.empty() || path.key.empty() || path.key.find('/') != std::string_view::npos) {
    return std::nullopt;
  }
  return path;
}

KvScopes::KvScopes(KvPlan plan, std::size_t max_stored_bytes)
    : max_stored_bytes_(max_stored_bytes) {
  reset(std::move(plan));
}

void KvScopes::reset(KvPlan plan) {
  scopes_.clear();
  stored_bytes_ = 0;
  stored_keys_ = 0;
  add_planned("global", plan.global_size);
  for (auto& [host, size] : plan.local_sizes) add_planned("local_" + host, size);
  for (const auto& [local_rank, size] : plan.cross_sizes) {
    add_planned("cross_" + std::to_string(local_rank), size);
  }
}

void KvScopes::add_planned(std::string name, int size) {
  if (size < 1) return;
  scopes_[std::move(name)].planned_size = size;
}

KvPutResult KvScopes::put(std::string_view scope, std::string_view key, std::string value) {
  auto scope_it = scopes_.find(scope);
  const Scope* existing_scope = scope_it == scopes_.end() ? nullptr : &scope_it->second;
  std::size_t replaced = 0;
  if (existing_scope) {
    auto old = existing_scope->data.find(key);
    if (old != existing_scope->data.end()) replaced = entry_cost(scope, key, old->second->size());
  }
  const std::size_t added = entry_cost(scope, key, value.size());
  if (added > max_stored_bytes_ || stored_bytes_ - replaced > max_stored_bytes_ - added) {
    return KvPutResult::kOverCap;
  }
  if (scope_it == scopes_.end()) scope_it = scopes_.try_emplace(std::string(scope)).first;
  auto& data = scope_it->second.data;
  auto shared = std::make_shared<const std::string>(std::move(value));
  if (auto old = data.find(key); old != data.end()) {
    old->second = std::move(shared);
  } else {
    data.emplace(std::string(key), std::move(shared));
    ++stored_keys_;
  }
  stored_bytes_ = stored_bytes_ - replaced + added;
  return KvPutResult::kStored;
}

KvValue KvScopes::get(std::string_view scope, std::string_view key) const {
  const Scope* s = find(scope);
  if (!s) return nullptr;
  auto it = s->data.find(key);
  return it == s->data.end() ? nullptr : it->second;
}

KvDeleteResult KvScopes::remove(std::string_view scope, std::string_view key) {
  auto scope_it = scopes_.find(scope);
  if (scope_it == scopes_.end()) return KvDeleteResult::kNoSuchKey;
  Scope& s = scope_it->second;
  if (s.planned_size > 0) {
    if (!s.finished.contains(key)) s.finished.emplace(key);
    if (s.finished.size() < static_cast<std::size_t>(s.planned_size)) {
      return KvDeleteResult::kRecorded;
    }
    clear_data(scope, s);
    s.finished.clear();
    return KvDeleteResult::kScopeCleared;
  }
  auto it = s.data.find(key);
  if (it == s.data.end()) return KvDeleteResult::kNoSuchKey;
  stored_bytes_ -= entry_cost(scope, it->first, it->second->size());
  --stored_keys_;
  s.data.erase(it);
  if (s.data.empty()) scopes_.erase(scope_it);
  return KvDeleteResult::kKeyRemoved;
}

void KvScopes::clear_data(std::string_view name, Scope& scope) {
  for (const auto& [key, value] : scope.data) stored_bytes_ -= entry_cost(name, key, value->size());
  stored_keys_ -= scope.data.size();
  scope.data.clear();
}

const KvScopes::Scope* KvScopes::find(std::string_view scope) const {
  auto it = scopes_.find(scope);
  return it == scopes_.end() ? nullptr : &it->second;
}

std::size_t KvScopes::keys_in(std::string_view scope) const {
  const Scope* s = find(scope);
  return s ? s->data.size() : 0;
}

bool KvScopes::has_scope(std::string_view scope) const {
  return find(scope) != nullptr;
}

int KvScopes::planned_size(std::string_view scope) const {
  const Scope* s = find(scope);
  return s ? s->planned_size : 0;
}

std::size_t KvScopes::finished_in(std::string_view scope) const {
  const Scope* s = find(scope);
  return s ? s->finished.size() : 0;
}

}  // namespace hvdrun::launcher::horovod
