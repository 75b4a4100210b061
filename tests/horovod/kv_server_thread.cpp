// Test helpers (kv_server_thread.h).
#include "tests/horovod/kv_server_thread.h"

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

namespace hvdrun::launcher::horovod::test {

std::vector<Slot> make_slots(int hosts, int per_host) {
  std::vector<Slot> slots;
  for (int h = 0; h < hosts; ++h) {
    for (int l = 0; l < per_host; ++l) {
      Slot s;
      s.rank = h * per_host + l;
      s.size = hosts * per_host;
      s.local_rank = l;
      s.local_size = per_host;
      s.cross_rank = h;
      s.cross_size = hosts;
      s.host = "node" + std::to_string(h);
      slots.push_back(s);
    }
  }
  return slots;
}

KvPlan plan_of(const std::vector<Slot>& slots) {
  KvPlan plan;
  for (const auto& s : slots) {
    plan.global_size = s.size;
    plan.local_sizes[s.host] = s.local_size;
    plan.cross_sizes[s.local_rank] = s.cross_size;
  }
  return plan;
}

KvServerThread::KvServerThread(KvServerOptions options, KvPlan plan)
    : io_([&](boost::asio::io_context& io) {
        options.bind_address = "127.0.0.1";
        options.port = 0;
        return std::make_unique<KvServer>(io, std::move(options), std::move(plan));
      }),
      port_(io_.on_io([](KvServer& s) { return s.port(); })) {}

LogCapture::LogCapture()
    : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(10000)),
      previous_(spdlog::get("launcher")) {
  spdlog::drop("launcher");
  auto logger = std::make_shared<spdlog::logger>("launcher", sink_);
  logger->set_pattern("%l %v");
  logger->set_level(spdlog::level::debug);
  spdlog::register_logger(logger);
}

LogCapture::~LogCapture() {
  spdlog::drop("launcher");
  if (previous_) spdlog::register_logger(previous_);
}

std::vector<std::string> LogCapture::lines() const {
  return sink_->last_formatted();
}

std::size_t LogCapture::count(std::string_view needle) const {
  std::size_t n = 0;
  for (const auto& line : lines()) {
    if (line.find(needle) != std::string::npos) ++n;
  }
  return n;
}

std::string LogCapture::all() const {
  std::string out;
  for (const auto& line : lines()) out += line;
  return out;
}

}  // namespace hvdrun::launcher::horovod::test
