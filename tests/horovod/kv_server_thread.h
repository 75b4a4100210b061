// Test helpers: a KvServer on 127.0.0.1:0 driven by its own io_context thread (as the
// launcher's single thread would), plans for H hosts x S slots, and a capture of the lines
// logged on the "launcher" logger.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "launcher/horovod/kv_server.h"

namespace hvdrun::launcher::horovod::test {

// One Horovod slot's environment (HOROVOD_RANK ... HOROVOD_HOSTNAME).
struct Slot {
  int rank = 0, size = 0, local_rank = 0, local_size = 0, cross_rank = 0, cross_size = 0;
  std::string host;
};

// `hosts` hosts "node0", "node1", ... with `per_host` slots each, ranks host-major.
std::vector<Slot> make_slots(int hosts, int per_host);
KvPlan plan_of(const std::vector<Slot>& slots);

class KvServerThread {
 public:
  explicit KvServerThread(KvServerOptions options = {}, KvPlan plan = {});
  ~KvServerThread();
  KvServerThread(const KvServerThread&) = delete;
  KvServerThread& operator=(const KvServerThread&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // Runs f on the io thread and returns its result.
  template <class F>
  auto on_io(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    post(std::function<void()>([&task] { task(); }));
    return result.get();
  }
  KvServerStats stats() {
    return on_io([this] { return server_->stats(); });
  }
  void close() {
    on_io([this] { server_->close(); });
  }
  void reset(KvPlan plan) {
    on_io([this, &plan] { server_->reset(std::move(plan)); });
  }

 private:
  void post(std::function<void()> f);

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::unique_ptr<KvServer> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// Registers a "launcher" logger (level debug) that keeps the lines it gets; the previous
// "launcher" logger, if any, is put back on destruction.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> lines() const;
  std::size_t count(std::string_view needle) const;  // lines containing `needle`
  std::string all() const;

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace hvdrun::launcher::horovod::test
