// AgentStacks: the node agent's side of hang forensics. On the launcher's StacksRequest it
// collects the stacks of the host's running workers (stack_collector.h: Python frames through
// the hook the agent puts on its workers' path, native frames by eu-stack) on a thread of its
// own, so that the agent's loop keeps relaying output and heartbeats; the loop polls fd() and
// sends what take() gives as Stacks frames. One collection at a time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/agent/agent_protocol.h"

namespace hvdrun::launcher::agent {

class AgentStacks {
 public:
  explicit AgentStacks(std::filesystem::path hook_dir);
  ~AgentStacks();  // waits for a collection under way (each tool run is bounded)
  AgentStacks(const AgentStacks&) = delete;
  AgentStacks& operator=(const AgentStacks&) = delete;

  // Starts collecting the stacks of `workers` (id, pid); false while a collection runs.
  bool start(std::vector<std::pair<std::uint32_t, pid_t>> workers);
  // Readable while results wait to be taken.
  int fd() const noexcept { return wake_.get(); }
  // The results collected since the last call.
  std::vector<StacksFrame> take();

 private:
  std::filesystem::path hook_dir_;
  UniqueFd wake_;  // an eventfd
  std::mutex mutex_;
  std::vector<StacksFrame> ready_;  // guarded by mutex_
  bool running_ = false;            // guarded by mutex_
  std::thread thread_;
};

}  // namespace hvdrun::launcher::agent
