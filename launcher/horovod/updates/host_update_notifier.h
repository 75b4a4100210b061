// HostUpdateNotifier: tells an elastic Horovod worker (rank 0) that the job's hosts changed,
// as horovodrun's driver does: one signed HostsUpdatedRequest (host_update_wire.h) to its
// notification service, whose signed reply acknowledges it. Rank 0 then has every worker raise
// HostsUpdatedInterrupt at their next state.commit(), and each asks for its new place.
// The addresses of the registration are tried in turn, each for at most `timeout` (connect,
// send, reply); the first acknowledgement ends it.
// Thread: the io_context's thread only. Lifetime: cancel() or the destructor ends a send under
// way without calling its callback; the io_context must outlive the object.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/horovod/updates/host_update_wire.h"
#include "launcher/horovod/updates/worker_registration.h"

namespace hvdrun::launcher::horovod {

class HostUpdateNotifier {
 public:
  // `error` is empty when the worker acknowledged the notification, else why no address did
  // ("127.0.0.1:40123: Connection refused; ...").
  using Done = std::function<void(const std::string& error)>;

  HostUpdateNotifier(boost::asio::io_context& io, std::chrono::milliseconds timeout);
  ~HostUpdateNotifier();
  HostUpdateNotifier(const HostUpdateNotifier&) = delete;
  HostUpdateNotifier& operator=(const HostUpdateNotifier&) = delete;

  // Sends one notification; a send under way is cancelled first.
  void send(const WorkerRegistration& to, std::int64_t timestamp, HostUpdate update, Done done);
  void cancel();

 private:
  struct Attempt;
  static boost::asio::awaitable<void> run(std::shared_ptr<Attempt> attempt,
                                          std::vector<NotificationAddress> addresses,
                                          std::string frame, std::string key,
                                          std::chrono::milliseconds timeout, Done done);
  static boost::asio::awaitable<std::string> notify_one(std::shared_ptr<Attempt> attempt,
                                                        const NotificationAddress& to,
                                                        const std::string& frame,
                                                        const std::string& key,
                                                        std::chrono::milliseconds timeout);

  boost::asio::io_context& io_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<Attempt> current_;
};

}  // namespace hvdrun::launcher::horovod
