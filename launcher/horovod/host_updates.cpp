// HostUpdates (host_updates.h).
#include "launcher/horovod/host_updates.h"

#include <algorithm>

namespace hvdrun::launcher::horovod {
namespace {

const char* words(HostUpdate update) {
  switch (update) {
    case HostUpdate::kAdded:
      return "added";
    case HostUpdate::kRemoved:
      return "removed";
    case HostUpdate::kMixed:
      return "added and removed";
  }
  return "changed";
}

}  // namespace

HostUpdates::HostUpdates(boost::asio::io_context& io, std::chrono::milliseconds timeout,
                         std::function<void(const std::string&)> note)
    : notifier_(io, timeout), note_(std::move(note)) {}

void HostUpdates::registered(std::uint32_t key, WorkerRegistration registration) {
  registrations_[key] = std::move(registration);
  if (pending_ && key == rank0_ && waiting_for_rank0_) send();
}

void HostUpdates::forget(std::uint32_t key) {
  registrations_.erase(key);
}

void HostUpdates::changed(HostUpdate update, const std::string& why, std::uint32_t rank0) {
  pending_ = pending_ ? static_cast<HostUpdate>(static_cast<std::uint8_t>(*pending_) |
                                                static_cast<std::uint8_t>(update))
                      : update;
  if (reason_.find(why) == std::string::npos) reason_ += (reason_.empty() ? "" : "; ") + why;
  rank0_ = rank0;
  if (sent_ == pending_) return;  // told already, or being told
  send();
}

void HostUpdates::reformed() {
  notifier_.cancel();
  pending_.reset();
  sent_.reset();
  reason_.clear();
  waiting_for_rank0_ = false;
}

void HostUpdates::send() {
  const auto it = registrations_.find(rank0_);
  if (it == registrations_.end()) {
    if (!waiting_for_rank0_) {
      note_("slots " + std::string(words(*pending_)) + " (" + reason_ +
            "); the Horovod workers are told once rank 0 has registered its notification "
            "service (hvd.elastic.run)");
    }
    waiting_for_rank0_ = true;
    return;
  }
  waiting_for_rank0_ = false;
  // Horovod takes in an update whose timestamp is greater than the last one's (seconds).
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  last_timestamp_ = std::max<std::int64_t>(now, last_timestamp_ + 1);
  const std::string what = std::string(words(*pending_));
  sent_ = pending_;
  notifier_.send(it->second, last_timestamp_, *pending_, [this, what](const std::string& error) {
    if (!error.empty()) sent_.reset();  // the next change tries again
    if (error.empty()) {
      note_("told the Horovod workers that slots were " + what + " (" + reason_ +
            "); they re-form at their next state.commit()");
    } else {
      note_("warning: could not tell the Horovod workers that slots were " + what +
            " (rank 0's notification service: " + error + "); they keep their generation");
    }
  });
}

}  // namespace hvdrun::launcher::horovod
