// AgentStacks (agent_stacks.h).
#include "launcher/agent/agent_stacks.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include "launcher/stacks/stack_collector.h"

namespace hvdrun::launcher::agent {

AgentStacks::AgentStacks(std::filesystem::path hook_dir)
    : hook_dir_(std::move(hook_dir)), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

AgentStacks::~AgentStacks() {
  if (thread_.joinable()) thread_.join();
}

bool AgentStacks::start(std::vector<std::pair<std::uint32_t, pid_t>> workers) {
  {
    std::lock_guard lock(mutex_);
    if (running_) return false;
    running_ = true;
  }
  if (thread_.joinable()) thread_.join();  // the last one, finished
  thread_ = std::thread([this, workers = std::move(workers)] {
    for (const auto& [id, pid] : workers) {  // one by one: an agent's host may be busy
      const RankStacks r = collect_one(StackTarget{0, "", pid}, hook_dir_);
      std::lock_guard lock(mutex_);
      ready_.push_back(StacksFrame{id, static_cast<std::int32_t>(pid), r.python, r.native, r.note});
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof one);
    }
    std::lock_guard lock(mutex_);
    running_ = false;
  });
  return true;
}

std::vector<StacksFrame> AgentStacks::take() {
  std::uint64_t count = 0;
  [[maybe_unused]] const auto n = ::read(wake_.get(), &count, sizeof count);
  std::lock_guard lock(mutex_);
  return std::exchange(ready_, {});
}

}  // namespace hvdrun::launcher::agent
