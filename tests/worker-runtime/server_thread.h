// A rendezvous server on 127.0.0.1:0 on a background io_context thread, for tests that run
// join_job() with threads as ranks. Slot s is rank s, all on one host ("localhost");
// job_options() gives the worker Options of one slot.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "rendezvous/server.h"
#include "tests/support/io_thread.h"
#include "tests/worker-runtime/ring_harness.h"
#include "worker-runtime/options.h"

namespace hvdrun {

class ServerThread {
 public:
  ServerThread(int slots, std::chrono::milliseconds start_timeout)
      : io_([&](boost::asio::io_context& io) {
          rdzv::ServerOptions options;
          options.secret = std::string(test::kSecret);
          for (int s = 0; s < slots; ++s) {
            options.slots.push_back({s, s, slots, 0, 1, 0, 1, 0, "localhost"});
          }
          options.start_timeout = start_timeout;
          return std::make_unique<rdzv::Server>(io, options);
        }),
        port_(io_.on_io([](rdzv::Server& s) { return s.port(); })) {}
  std::uint16_t port() const { return port_; }

 private:
  test::IoThread<rdzv::Server> io_;
  std::uint16_t port_ = 0;
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
