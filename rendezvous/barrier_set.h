// Named barriers of the rendezvous, scoped by generation: who entered, who waits.
// A barrier completes when `size` distinct slots entered; its name is then free for reuse.
// Pure state (no I/O); ServerCore answers the waiters. Thread: the io_context thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rendezvous/wait.h"

namespace hvdrun::rdzv {

class BarrierSet {
 public:
  struct Entered {
    bool duplicate = false;                       // this slot is already waiting
    std::vector<std::shared_ptr<Wait>> released;  // non-empty when the barrier completed
  };

  Entered enter(std::shared_ptr<Wait> wait, std::uint32_t slot, std::size_t size);
  void remove(const Wait& wait);
  // Slots waiting in the barrier of `wait` (index = slot), for timeout messages.
  std::vector<bool> entered(const Wait& wait, std::size_t size) const;

 private:
  struct Pending {
    std::vector<bool> in;                                                  // by slot
    std::vector<std::pair<std::uint32_t, std::shared_ptr<Wait>>> waiters;  // (slot, wait)
  };
  using Key = std::pair<std::uint32_t, std::string>;  // (generation, name)

  std::map<Key, Pending> pending_;
};

}  // namespace hvdrun::rdzv
