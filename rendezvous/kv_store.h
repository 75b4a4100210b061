// Generation-scoped key-value store of the rendezvous and its pending blocking gets.
// Pure state (no I/O); ServerCore answers the waiters. Thread: the io_context thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/wait.h"

namespace hvdrun::rdzv {

class KvStore {
 public:
  // Bytes an entry is charged: key, value and 64 for the bookkeeping.
  static std::size_t entry_cost(const std::string& key, const std::string& value) noexcept {
    return key.size() + value.size() + 64;
  }
  // Why storing `value` under `key` would pass max_bytes or max_keys; empty if it fits.
  std::string refuse_reason(std::uint32_t generation, const std::string& key,
                            const std::string& value, std::size_t max_bytes,
                            std::size_t max_keys) const;
  // Stores the value and returns the gets waiting for this key (no longer held here).
  std::vector<std::shared_ptr<Wait>> set(std::uint32_t generation, const std::string& key,
                                         std::string value);
  // Null if the key is not set in that generation.
  const std::string* find(std::uint32_t generation, const std::string& key) const;
  void add_waiter(std::shared_ptr<Wait> wait);
  void remove_waiter(const Wait& wait);
  // The gets waiting for a key now.
  std::size_t waiting() const noexcept;
  std::size_t size() const noexcept { return values_.size(); }
  std::size_t bytes() const noexcept { return bytes_; }
  // Forgets every value of generations before `generation` (their waiters are gone with
  // their sessions).
  void drop_before(std::uint32_t generation);

 private:
  struct Key {
    std::uint32_t generation;
    std::string name;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept;
  };

  std::unordered_map<Key, std::string, KeyHash> values_;
  std::size_t bytes_ = 0;  // entry_cost() of every stored value
  std::unordered_map<Key, std::vector<std::shared_ptr<Wait>>, KeyHash> waiters_;
};

}  // namespace hvdrun::rdzv
