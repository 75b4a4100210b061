// Test helpers: a KvServer on 127.0.0.1:0 on its own io thread (tests/support/io_thread.h), plans
// for H hosts x S slots, and a capture of the lines logged on the "launcher" logger.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "launcher/horovod/kv_server.h"
#include "tests/support/io_thread.h"

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

  std::uint16_t port() const noexcept { return port_; }
  KvServerStats stats() {
    return io_.on_io([](KvServer& s) { return s.stats(); });
  }
  void close() {
    io_.on_io([](KvServer& s) { s.close(); });
  }
  void dismiss_spare(const std::string& name) {
    io_.on_io([&name](KvServer& s) { s.dismiss_spare(name); });
  }
  std::vector<std::string> silent_spares(std::chrono::milliseconds limit) {
    return io_.on_io([limit](KvServer& s) { return s.silent_spares(limit); });
  }
  void reset(KvPlan plan) {
    io_.on_io([&plan](KvServer& s) { s.reset(std::move(plan)); });
  }

 private:
  hvdrun::test::IoThread<KvServer> io_;
  std::uint16_t port_ = 0;
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
