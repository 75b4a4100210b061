// MemoryBudget: one bound on the bytes the rendezvous server holds for all its clients
// together (replies not yet read, frames being read beyond the read buffer), so that many
// connections cannot multiply the per-connection bound. A BudgetShare is one connection's
// part, given back when it goes (RAII). Thread: the server's io_context thread only.
#pragma once

#include <cstddef>

namespace hvdrun::rdzv {

class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t limit) : limit_(limit) {}
  // Takes `bytes` if the total stays within the limit; otherwise takes nothing.
  bool take(std::size_t bytes) noexcept {
    if (bytes > limit_ - held_) return false;
    held_ += bytes;
    return true;
  }
  void give_back(std::size_t bytes) noexcept { held_ -= bytes < held_ ? bytes : held_; }
  std::size_t held() const noexcept { return held_; }
  std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
  std::size_t held_ = 0;
};

class BudgetShare {
 public:
  explicit BudgetShare(MemoryBudget& budget) : budget_(budget) {}
  ~BudgetShare() { budget_.give_back(held_); }
  BudgetShare(const BudgetShare&) = delete;
  BudgetShare& operator=(const BudgetShare&) = delete;

  bool grow(std::size_t bytes) noexcept {
    if (!budget_.take(bytes)) return false;
    held_ += bytes;
    return true;
  }
  void shrink(std::size_t bytes) noexcept {
    if (bytes > held_) bytes = held_;
    budget_.give_back(bytes);
    held_ -= bytes;
  }
  std::size_t held() const noexcept { return held_; }
  const MemoryBudget& budget() const noexcept { return budget_; }

 private:
  MemoryBudget& budget_;
  std::size_t held_ = 0;
};

}  // namespace hvdrun::rdzv
