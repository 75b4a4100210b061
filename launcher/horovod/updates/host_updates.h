// HostUpdates: the host changes of an elastic Horovod job, as its workers learn of them. A
// change (slots added or removed) is sent to the current rank 0's notification service
// (HostUpdateNotifier), which has every worker raise HostsUpdatedInterrupt at its next
// state.commit() and ask for its new place; the launcher re-forms once they all asked, and
// only then starts the workers of added slots. A change waits while rank 0 has not registered
// its service (it registers when it enters hvd.elastic.run) and is sent when it does. Until a
// re-formation takes it in, the change is sent again every `resend` with the same timestamp
// (Horovod takes in a timestamp once, so a repeat is harmless): a notice that reached rank 0
// while it re-formed for another reason is dropped by Horovod (State.on_reset empties its
// queue), and one that could not be delivered is tried again. A change that adds to one
// already sent gets a new timestamp (the flags add up).
// Workers are named by their key (HVDRUN_SLOT), which a re-formation keeps.
// Thread: the io_context's thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "launcher/horovod/updates/host_update_notifier.h"
#include "launcher/horovod/updates/worker_registration.h"

namespace hvdrun::launcher::horovod {

class HostUpdates {
 public:
  // `note`: one line for the user (a change sent, or why it could not be).
  HostUpdates(boost::asio::io_context& io, std::chrono::milliseconds timeout,
              std::chrono::milliseconds resend, std::function<void(const std::string&)> note);

  // The worker of `key` registered its notification service.
  void registered(std::uint32_t key, WorkerRegistration registration);
  // The worker of `key` is gone: its registration goes with it.
  void forget(std::uint32_t key);
  // The job's slots changed (`update`, `why`); `rank0` is the key of the current rank 0.
  void changed(HostUpdate update, const std::string& why, std::uint32_t rank0);
  // A change waits for the workers to ask for their places (sent or not).
  bool pending() const noexcept { return pending_.has_value(); }
  // What the pending change is, for the re-formation's reason ("slots added by ...").
  const std::string& pending_reason() const noexcept { return reason_; }
  // The workers re-formed: the change is taken in.
  void reformed();

 private:
  void send();
  void schedule_resend();

  HostUpdateNotifier notifier_;
  boost::asio::steady_timer resend_timer_;
  std::chrono::milliseconds resend_;
  std::function<void(const std::string&)> note_;
  std::map<std::uint32_t, WorkerRegistration> registrations_;
  std::optional<HostUpdate> pending_;
  std::string reason_;
  std::uint32_t rank0_ = 0;
  std::int64_t timestamp_ = 0;      // the pending change's
  bool waiting_for_rank0_ = false;  // said that rank 0 has not registered
  bool told_ = false;               // said that rank 0 acknowledged the pending change
  bool warned_ = false;             // warned that the pending change could not be delivered
};

}  // namespace hvdrun::launcher::horovod
