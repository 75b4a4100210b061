// The node agent's outgoing frames, written to the launcher without blocking: control frames
// (Hello, Started, Exit, OutputClosed, Heartbeat) go ahead of queued output, so that a worker's
// end reaches the launcher while output waits; frames are never interleaved. Counts each
// worker's output bytes not yet written, so the agent knows when a worker's output is through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "launcher/agent/agent_protocol.h"

namespace hvdrun::launcher::agent {

class Outbox {
 public:
  explicit Outbox(int fd) : fd_(fd) {}

  void control(const FromAgent& frame);
  // `bytes` in Output frames of at most kMaxOutputChunk.
  void output(std::uint32_t id, StreamKind stream, std::string_view bytes);
  // Raw bytes ahead of everything (the preamble).
  void raw(std::string bytes);

  // Output bytes of worker `id` not yet written.
  std::size_t unsent(std::uint32_t id) const;
  bool wants_write() const noexcept {
    return offset_ < current_.bytes.size() || !control_.empty() || !data_.empty();
  }
  // Writes what the descriptor takes now; false once it is closed (the launcher is gone),
  // after which everything is dropped.
  bool flush();
  bool dead() const noexcept { return dead_; }
  int fd() const noexcept { return fd_; }

 private:
  struct Queued {
    std::string bytes;
    std::uint32_t id;
    std::size_t output;  // output bytes it carries (0 for control frames)
  };
  bool take_next();

  int fd_;
  Queued current_{};
  std::size_t offset_ = 0;
  std::deque<Queued> control_;
  std::deque<Queued> data_;
  std::map<std::uint32_t, std::size_t> unsent_;
  bool dead_ = false;
};

}  // namespace hvdrun::launcher::agent
