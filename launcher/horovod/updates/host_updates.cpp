// HostUpdates (host_updates.h).
#include "launcher/horovod/updates/host_updates.h"

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
                         std::chrono::milliseconds resend,
                         std::function<void(const std::string&)> note)
    : notifier_(io, timeout), resend_timer_(io), resend_(resend), note_(std::move(note)) {}

void HostUpdates::registered(std::uint32_t key, WorkerRegistration registration) {
  registrations_[key] = std::move(registration);
  if (pending_ && key == rank0_) send();
}

void HostUpdates::forget(std::uint32_t key) {
  registrations_.erase(key);
  if (pending_ && key == rank0_) {  // the re-formation its exit brings takes the change in
    resend_timer_.cancel();
    notifier_.cancel();
    waiting_for_rank0_ = true;  // and nothing to say about it
  }
}

void HostUpdates::changed(HostUpdate update, const std::string& why, std::uint32_t rank0) {
  const auto before = pending_;
  pending_ = pending_ ? static_cast<HostUpdate>(static_cast<std::uint8_t>(*pending_) |
                                                static_cast<std::uint8_t>(update))
                      : update;
  if (reason_.find(why) == std::string::npos) reason_ += (reason_.empty() ? "" : "; ") + why;
  const bool new_rank0 = rank0 != rank0_;
  rank0_ = rank0;
  if (before == pending_ && !new_rank0) return;  // sent already, and again on the timer
  if (before != pending_) {
    // Horovod takes in an update whose timestamp is greater than the last one's (seconds).
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    timestamp_ = std::max<std::int64_t>(now, timestamp_ + 1);
    told_ = false;
    warned_ = false;
  }
  send();
}

void HostUpdates::reformed() {
  notifier_.cancel();
  resend_timer_.cancel();
  pending_.reset();
  reason_.clear();
  waiting_for_rank0_ = false;
  told_ = false;
  warned_ = false;
}

void HostUpdates::send() {
  resend_timer_.cancel();
  const auto it = registrations_.find(rank0_);
  if (it == registrations_.end()) {
    if (!waiting_for_rank0_) {
      note_("slots " + std::string(words(*pending_)) + " (" + reason_ +
            "); the Horovod workers are told once rank 0 has registered its notification "
            "service (hvd.elastic.run)");
    }
    waiting_for_rank0_ = true;
    return;  // registered() sends it
  }
  waiting_for_rank0_ = false;
  const std::string what = std::string(words(*pending_));
  notifier_.send(it->second, timestamp_, *pending_, [this, what](const std::string& error) {
    if (error.empty() && !told_) {
      told_ = true;
      note_("told the Horovod workers that slots were " + what + " (" + reason_ +
            "); they re-form at their next state.commit()");
    } else if (!error.empty() && !warned_) {
      warned_ = true;
      note_("warning: could not tell the Horovod workers that slots were " + what +
            " (rank 0's notification service: " + error + "); trying again every " +
            std::to_string(resend_.count()) + " ms while they keep their generation");
    }
    schedule_resend();
  });
}

void HostUpdates::schedule_resend() {
  resend_timer_.expires_after(resend_);
  resend_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !pending_) return;  // cancelled (the object may be gone) or taken in
    send();
  });
}

}  // namespace hvdrun::launcher::horovod
