// Load: 1,000 concurrent clients poll GET of a missing key every 10 ms for about 2 s (what a
// large job's workers do while they wait for a slow peer), each request on a new loopback
// connection, while one more client does PUT/GET pairs. Every request must get a
// well-formed answer (nothing refused or reset) and the pairs must stay far inside
// Horovod's client tolerance. The generator is one Asio thread with a coroutine per client.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <iostream>
#include <thread>

#include "common/use_tuple.h"
#include "tests/horovod/horovod_http_client.h"
#include "tests/horovod/kv_server_thread.h"

namespace hvdrun::launcher::horovod::test {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

struct LoadStats {
  std::uint64_t ok = 0;
  std::uint64_t failed = 0;
  std::string first_failure;
  std::size_t in_flight = 0;
  std::size_t peak_in_flight = 0;
  std::size_t clients_done = 0;

  void fail(std::string what) {
    if (failed++ == 0) first_failure = std::move(what);
  }
};

// Lets fewer than the process's open-file limit stop the test: soft limit up to the hard one.
void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// One polling worker: connect, send Horovod's GET, read until the server closes, check the
// answer is "404 with Content-Length: 0", sleep 10 ms; until `stop`.
asio::awaitable<void> poller(asio::ip::tcp::endpoint server, Clock::time_point stop,
                             LoadStats& stats) {
  auto executor = co_await asio::this_coro::executor;
  static constexpr std::string_view kRequest =
      "GET /global/7 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
  asio::steady_timer pause(executor);
  std::string answer;
  while (Clock::now() < stop) {
    asio::ip::tcp::socket socket(executor);
    stats.peak_in_flight = std::max(stats.peak_in_flight, ++stats.in_flight);
    auto [ec] = co_await socket.async_connect(server, kUseTuple);
    if (!ec)
      std::tie(ec, std::ignore) =
          co_await asio::async_write(socket, asio::buffer(kRequest), kUseTuple);
    answer.clear();
    if (!ec) {
      auto [read_ec, n] =
          co_await asio::async_read(socket, asio::dynamic_buffer(answer, 4096), kUseTuple);
      if (read_ec != asio::error::eof) ec = read_ec;
    }
    --stats.in_flight;
    if (ec) {
      stats.fail("connection error: " + ec.message());
    } else if (answer.rfind("HTTP/1.1 404 ", 0) != 0 ||
               answer.find("\r\nContent-Length: 0\r\n") == std::string::npos || answer.size() < 4 ||
               answer.compare(answer.size() - 4, 4, "\r\n\r\n") != 0) {
      stats.fail("bad answer: " + answer);
    } else {
      ++stats.ok;
    }
    pause.expires_after(std::chrono::milliseconds(10));
    co_await pause.async_wait(kUseTuple);
  }
  ++stats.clients_done;
}

// Runs `clients` pollers for `duration`; the io_context gets a bounded extra time to finish.
LoadStats run_pollers(std::uint16_t port, int clients, std::chrono::milliseconds duration) {
  asio::io_context io(1);
  LoadStats stats;
  const asio::ip::tcp::endpoint server(asio::ip::address_v4::loopback(), port);
  const auto stop = Clock::now() + duration;
  for (int i = 0; i < clients; ++i) asio::co_spawn(io, poller(server, stop, stats), asio::detached);
  io.run_for(duration + std::chrono::seconds(8));
  return stats;
}

struct PairStats {
  int pairs = 0;
  int failures = 0;
  std::string first_failure;
  Clock::duration max_latency{};
};

// PUT then GET of a fresh key, timed per request, until `done`.
PairStats run_pairs(std::uint16_t port, const std::atomic<bool>& done) {
  PairStats stats;
  const auto timed = [&stats](auto request) {
    const auto start = Clock::now();
    auto r = request();
    stats.max_latency = std::max(stats.max_latency, Clock::now() - start);
    return r;
  };
  while (!done.load()) {
    const std::string path = "/pairs/k" + std::to_string(stats.pairs);
    const std::string value(64, static_cast<char>('a' + stats.pairs % 26));
    const auto put = timed([&] { return http_request(port, "PUT", path, value, 10s); });
    const auto get = timed([&] { return http_request(port, "GET", path, {}, 10s); });
    if (put.status != 200 || get.status != 200 || get.body != value) {
      if (stats.failures++ == 0) {
        stats.first_failure = "PUT " + std::to_string(put.status) + " GET " +
                              std::to_string(get.status) + " errno " + std::to_string(get.error);
      }
    }
    ++stats.pairs;
  }
  return stats;
}

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

TEST(KvLoad, ThousandPollingClientsAndPutGetPairs) {
  raise_open_file_limit();
  KvServerThread server({}, plan_of(make_slots(125, 8)));
  std::atomic<bool> done{false};
  PairStats pairs;
  std::thread pair_client([&] { pairs = run_pairs(server.port(), done); });
  const auto start = Clock::now();
  const LoadStats load = run_pollers(server.port(), 1000, std::chrono::milliseconds(2000));
  const auto elapsed = Clock::now() - start;
  done = true;
  pair_client.join();
  const auto server_stats = server.stats();

  std::cout << "[load] " << load.ok << " polls answered in " << ms(elapsed) << " ms ("
            << static_cast<int>(load.ok / (ms(elapsed) / 1000)) << "/s), peak in flight "
            << load.peak_in_flight << " (server peak open " << server_stats.peak_connections
            << "); " << pairs.pairs << " PUT/GET pairs, max latency " << ms(pairs.max_latency)
            << " ms\n";
  EXPECT_EQ(load.failed, 0u) << load.first_failure;
  EXPECT_EQ(load.clients_done, 1000u);
  EXPECT_GT(load.ok, 1000u);
  EXPECT_GE(load.peak_in_flight, 900u);
  EXPECT_EQ(pairs.failures, 0) << pairs.first_failure;
  EXPECT_GT(pairs.pairs, 0);
  EXPECT_LT(pairs.max_latency, std::chrono::seconds(2));
  EXPECT_EQ(server_stats.timeouts, 0u);
  EXPECT_EQ(server_stats.bad_requests, 0u);
}

TEST(KvLoad, AtASmallConnectionCapClientsWaitButAllAreServed) {
  raise_open_file_limit();
  KvServerOptions options;
  options.max_connections = 16;
  KvServerThread server(options);
  const LoadStats load = run_pollers(server.port(), 300, std::chrono::milliseconds(1000));
  const auto stats = server.stats();
  std::cout << "[load, cap 16] " << load.ok << " polls answered, peak in flight "
            << load.peak_in_flight << ", server peak open " << stats.peak_connections << "\n";
  EXPECT_EQ(load.failed, 0u) << load.first_failure;
  EXPECT_EQ(load.clients_done, 300u);
  EXPECT_LE(stats.peak_connections, 16u);
  EXPECT_GE(stats.connection_pauses, 1u);
}

}  // namespace
}  // namespace hvdrun::launcher::horovod::test
