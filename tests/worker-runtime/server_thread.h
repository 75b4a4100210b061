// A rendezvous server on 127.0.0.1:0 on a background io_context thread, for tests that run
// join_job() with threads as ranks. Slot s is rank s, all on one host ("localhost");
// job_options() gives the worker Options of one slot.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "options.h"
#include "ring_harness.h"
#include "server.h"

namespace hvdrun {

class ServerThread {
 public:
  ServerThread(int slots, std::chrono::milliseconds start_timeout) : guard_(io_.get_executor()) {
    rdzv::ServerOptions options;
    options.secret = std::string(test::kSecret);
    for (int s = 0; s < slots; ++s) {
      options.slots.push_back({s, s, slots, 0, 1, 0, "localhost"});
    }
    options.start_timeout = start_timeout;
    server_ = std::make_unique<rdzv::Server>(io_, options);
    port_ = server_->port();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerThread() {
    std::promise<void> closed;
    boost::asio::post(io_, [&] {
      server_.reset();
      closed.set_value();
    });
    closed.get_future().wait();
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::unique_ptr<rdzv::Server> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

namespace test {

// A worker's options for `slot` of a ServerThread on `port`: 10 s timeouts.
inline Options job_options(std::uint16_t port, int slot) {
  Options options;
  options.rendezvous = "127.0.0.1:" + std::to_string(port);
  options.secret = std::string(kSecret);
  options.slot = static_cast<std::uint32_t>(slot);
  options.hostname = "localhost";
  options.timeout = std::chrono::seconds(10);
  options.start_timeout = std::chrono::seconds(10);
  return options;
}

}  // namespace test
}  // namespace hvdrun
