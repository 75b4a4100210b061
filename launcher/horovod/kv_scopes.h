// KvScopes: the store behind Horovod's HTTP rendezvous, without sockets. Values are binary
// blobs under (scope, key); "planned" scopes (global, local_<host>, cross_<local_rank>, sized
// by a KvPlan) are cleared once all their members have said they are done; any other scope
// name is an ad-hoc scope whose keys are deleted one by one. Keys plus values are capped.
// Thread: one owner thread, no locks. Values are shared so a reply can outlive a later PUT.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "launcher/horovod/kv_plan.h"

namespace hvdrun::launcher::horovod {

using KvValue = std::shared_ptr<const std::string>;

// A request target "/<scope>/<key>" split on '/': exactly ['', scope, key], both non-empty.
// No URL decoding (Horovod keys hold ':'); the views point into `target`.
struct KvPath {
  std::string_view scope;
  std::string_view key;
};
std::optional<KvPath> parse_kv_path(std::string_view target);

enum class KvPutResult { kStored, kOverCap };

enum class KvDeleteResult {
  kRecorded,      // planned scope: the key joined the finished list, members still missing
  kScopeCleared,  // planned scope: the last member finished, the scope's data was cleared
  kKeyRemoved,    // ad-hoc scope: the key was removed (and the scope too if now empty)
  kNoSuchKey,     // ad-hoc scope: nothing to remove
};

class KvScopes {
 public:
  // What one stored entry costs against the cap besides its scope name, key and value bytes
  // (map node, string headers, shared value): a scope name of 8 KiB with an empty value costs
  // 8 KiB, not 1 byte.
  static constexpr std::size_t kEntryOverhead = 64;
  // Bytes charged for an entry.
  static std::size_t entry_cost(std::string_view scope, std::string_view key, std::size_t value) {
    return scope.size() + key.size() + value + kEntryOverhead;
  }

  KvScopes(KvPlan plan, std::size_t max_stored_bytes);

  // Stores `value` under (scope, key), replacing an older value, unless the stored bytes
  // (keys + values) would then exceed the cap; a refused PUT changes nothing.
  KvPutResult put(std::string_view scope, std::string_view key, std::string value);
  // The value, or nullptr when absent.
  KvValue get(std::string_view scope, std::string_view key) const;
  KvDeleteResult remove(std::string_view scope, std::string_view key);
  // Wipes every scope and finished list and takes the sizes of `plan`.
  void reset(KvPlan plan);

  std::size_t stored_bytes() const noexcept { return stored_bytes_; }
  std::size_t stored_keys() const noexcept { return stored_keys_; }
  std::size_t max_stored_bytes() const noexcept { return max_stored_bytes_; }
  // Keys stored in `scope` (0 when it does not exist).
  std::size_t keys_in(std::string_view scope) const;
  bool has_scope(std::string_view scope) const;
  // The planned size of `scope`, 0 for an ad-hoc or absent scope.
  int planned_size(std::string_view scope) const;
  // Distinct keys on the finished list of a planned scope.
  std::size_t finished_in(std::string_view scope) const;

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  template <class V>
  using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;
  using StringSet = std::unordered_set<std::string, StringHash, std::equal_to<>>;

  struct Scope {
    StringMap<KvValue> data;
    StringSet finished;    // planned scopes: keys (ranks) that sent DELETE; duplicates count once
    int planned_size = 0;  // 0: ad-hoc
  };

  void add_planned(std::string name, int size);
  void clear_data(std::string_view name, Scope& scope);
  const Scope* find(std::string_view scope) const;

  StringMap<Scope> scopes_;
  std::size_t max_stored_bytes_;
  std::size_t stored_bytes_ = 0;
  std::size_t stored_keys_ = 0;
};

}  // namespace hvdrun::launcher::horovod
