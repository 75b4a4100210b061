// The node agent's outgoing queue (agent_outbox.h).
#include "launcher/agent/agent_outbox.h"

#include <unistd.h>

#include <cerrno>

namespace hvdrun::launcher::agent {

void Outbox::control(const FromAgent& frame) {
  if (!dead_) control_.push_back({encode(frame), 0, 0});
}

void Outbox::raw(std::string bytes) {
  if (!dead_) control_.push_front({std::move(bytes), 0, 0});
}

void Outbox::output(std::uint32_t id, StreamKind stream, std::string_view bytes) {
  while (!dead_ && !bytes.empty()) {
    const auto chunk = bytes.substr(0, kMaxOutputChunk);
    bytes.remove_prefix(chunk.size());
    data_.push_back({encode(OutputFrame{id, stream, std::string(chunk)}), id, chunk.size()});
    unsent_[id] += chunk.size();
  }
}

std::size_t Outbox::unsent(std::uint32_t id) const {
  const auto it = unsent_.find(id);
  return it == unsent_.end() ? 0 : it->second;
}

bool Outbox::take_next() {
  auto& from = !control_.empty() ? control_ : data_;
  if (from.empty()) return false;
  current_ = std::move(from.front());
  from.pop_front();
  offset_ = 0;
  return true;
}

bool Outbox::flush() {
  while (!dead_) {
    if (offset_ == current_.bytes.size() && !take_next()) return true;
    const ssize_t n =
        ::write(fd_, current_.bytes.data() + offset_, current_.bytes.size() - offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {
      dead_ = true;
      control_.clear();
      data_.clear();
      unsent_.clear();
      current_ = {};
      offset_ = 0;
      return false;
    }
    offset_ += static_cast<std::size_t>(n);
    if (offset_ == current_.bytes.size() && current_.output > 0) {
      auto it = unsent_.find(current_.id);
      if (it != unsent_.end() && (it->second -= current_.output) == 0) unsent_.erase(it);
    }
  }
  return false;
}

}  // namespace hvdrun::launcher::agent
