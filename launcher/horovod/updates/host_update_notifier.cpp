// HostUpdateNotifier (host_update_notifier.h): a coroutine per send over the addresses.
#include "launcher/horovod/updates/host_update_notifier.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/use_tuple.h"

namespace hvdrun::launcher::horovod {
namespace asio = boost::asio;
using asio::ip::tcp;

// One send: the socket of the address being tried and its deadline, cancelled together.
struct HostUpdateNotifier::Attempt {
  explicit Attempt(asio::io_context& io) : socket(io), deadline(io) {}
  tcp::socket socket;
  asio::steady_timer deadline;
  bool cancelled = false;
  bool expired = false;  // the deadline closed the socket
  unsigned address = 0;  // the address being tried: a deadline of an earlier one is stale

  void cancel() {
    cancelled = true;
    deadline.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
  }
};

HostUpdateNotifier::HostUpdateNotifier(asio::io_context& io, std::chrono::milliseconds timeout)
    : io_(io), timeout_(timeout) {}

HostUpdateNotifier::~HostUpdateNotifier() {
  cancel();
}

void HostUpdateNotifier::cancel() {
  if (current_) current_->cancel();
  current_.reset();
}

void HostUpdateNotifier::send(const WorkerRegistration& to, std::int64_t timestamp,
                              HostUpdate update, Done done) {
  cancel();
  current_ = std::make_shared<Attempt>(io_);
  asio::co_spawn(
      io_,
      run(current_, to.addresses, frame_message(to.key, hosts_updated_request(timestamp, update)),
          to.key, timeout_, std::move(done)),
      asio::detached);
}

asio::awaitable<void> HostUpdateNotifier::run(std::shared_ptr<Attempt> attempt,
                                              std::vector<NotificationAddress> addresses,
                                              std::string frame, std::string key,
                                              std::chrono::milliseconds timeout, Done done) {
  std::string errors;
  for (const auto& address : addresses) {
    const std::string error = co_await notify_one(attempt, address, frame, key, timeout);
    if (attempt->cancelled) co_return;
    if (error.empty()) {
      done({});
      co_return;
    }
    errors += (errors.empty() ? "" : "; ") + address.ip + ":" + std::to_string(address.port) +
              " (" + address.interface + "): " + error;
  }
  done(errors.empty() ? std::string("no address") : errors);
}

asio::awaitable<std::string> HostUpdateNotifier::notify_one(std::shared_ptr<Attempt> attempt,
                                                            const NotificationAddress& to,
                                                            const std::string& frame,
                                                            const std::string& key,
                                                            std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address_v4(to.ip, ec);
  if (ec) co_return "not an IPv4 address";
  attempt->socket = tcp::socket(attempt->socket.get_executor());
  attempt->expired = false;
  const unsigned address = ++attempt->address;
  attempt->deadline.expires_after(timeout);
  attempt->deadline.async_wait(
      [weak = std::weak_ptr<Attempt>(attempt), address](const boost::system::error_code& wait) {
        const auto a = weak.lock();
        if (wait || !a || a->address != address) return;
        a->expired = true;
        boost::system::error_code ignored;
        a->socket.close(ignored);
      });
  auto failed = [&](const char* step, const boost::system::error_code& e) {
    attempt->deadline.cancel();
    if (attempt->expired) {
      return std::string(step) + ": no answer within " + std::to_string(timeout.count()) + " ms";
    }
    return std::string(step) + ": " + e.message();
  };
  auto& socket = attempt->socket;
  if (auto [e] = co_await socket.async_connect(tcp::endpoint(ip, to.port), kUseTuple); e) {
    co_return failed("connect", e);
  }
  if (auto [e, n] = co_await asio::async_write(socket, asio::buffer(frame), kUseTuple); e) {
    co_return failed("send", e);
  }
  std::string header(kFrameHeaderSize, '\0');
  if (auto [e, n] = co_await asio::async_read(socket, asio::buffer(header), kUseTuple); e) {
    co_return failed("reply", e);
  }
  const auto head = read_frame_header(header, kMaxReplyBody);
  if (!head) {
    attempt->deadline.cancel();
    co_return "the reply's length is not one of an acknowledgement";
  }
  std::string body(head->body_size, '\0');
  if (auto [e, n] = co_await asio::async_read(socket, asio::buffer(body), kUseTuple); e) {
    co_return failed("reply", e);
  }
  attempt->deadline.cancel();
  boost::system::error_code ignored;
  socket.close(ignored);
  if (!frame_signed(key, *head, body)) co_return "the reply is not signed with the worker's key";
  if (body.find("AckResponse") == std::string::npos)
    co_return "the reply is not an acknowledgement";
  co_return std::string();
}

}  // namespace hvdrun::launcher::horovod
