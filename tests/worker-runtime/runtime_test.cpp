// The free-function API outside a job (a world of one), its errors before init(), the
// HVDRUN_* option parsing, and Runtime against a real rendezvous server with threads as
// ranks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hvdrun/hvdrun.h"
#include "rendezvous/env_names.h"
#include "rendezvous/server.h"
#include "tests/worker-runtime/options_from.h"
#include "tests/worker-runtime/ring_harness.h"
#include "tests/worker-runtime/server_thread.h"
#include "worker-runtime/job.h"
#include "worker-runtime/options.h"

namespace hvdrun {
namespace {

// Clears the HVDRUN_* variables for the test and restores nothing: tests own their env.
void clear_env() {
  for (const char* name : {env::kRendezvousAddr, env::kSecret, env::kSlot, env::kHostname,
                           env::kStartTimeout, env::kTimeout, env::kLogLevel}) {
    ::unsetenv(name);
  }
}

TEST(Runtime, OutsideAJobInitGivesAWorldOfOne) {
  clear_env();
  shutdown();
  EXPECT_FALSE(is_initialized());
  {
    InitGuard guard;
    EXPECT_TRUE(is_initialized());
    EXPECT_EQ(rank(), 0);
    EXPECT_EQ(size(), 1);
    EXPECT_EQ(local_rank(), 0);
    EXPECT_EQ(local_size(), 1);
    EXPECT_EQ(cross_rank(), 0);
    EXPECT_EQ(cross_size(), 1);
    std::vector<float> v{1.5f, -2.0f, 3.0f};
    allreduce(std::span(v), ReduceOp::kAverage);
    EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f, 3.0f}));
    std::vector<std::int32_t> out(3, 0);
    const std::int32_t in[3] = {4, 5, 6};
    allreduce(in, out.data(), 3, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(out, (std::vector<std::int32_t>{4, 5, 6}));
    broadcast(std::span(v), 0);
    EXPECT_THROW(broadcast(std::span(v), 1), UsageError);
    const std::vector<double> mine{1.0, 2.0};
    EXPECT_EQ(allgather(std::span<const double>(mine)), mine);
    barrier();
    init();  // a second init() is a no-op
    EXPECT_EQ(size(), 1);
  }
  EXPECT_FALSE(is_initialized());
  shutdown();  // idempotent
  init();      // and init() works again after shutdown()
  EXPECT_EQ(size(), 1);
  shutdown();
}

TEST(Runtime, CollectivesBeforeInitAreUsageErrors) {
  shutdown();
  float x = 1;
  try {
    allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum);
    FAIL() << "allreduce before init() did not throw";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "hvdrun::allreduce called before hvdrun::init()");
  }
  EXPECT_THROW(rank(), UsageError);
  EXPECT_THROW(barrier(), UsageError);
}

TEST(Runtime, MalformedEnvironmentIsAUsageErrorNamingIt) {
  clear_env();
  ::setenv(env::kTimeout, "soon", 1);
  try {
    init();
    FAIL() << "init() accepted HVDRUN_TIMEOUT=soon";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("HVDRUN_TIMEOUT='soon'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(is_initialized());
  clear_env();
}

TEST(Options, DefaultsAndValues) {
  const Options defaults = test::options_from({});
  EXPECT_TRUE(defaults.rendezvous.empty());
  EXPECT_EQ(defaults.timeout, std::chrono::seconds(60));
  EXPECT_EQ(defaults.start_timeout, std::chrono::seconds(30));
  EXPECT_EQ(defaults.log_level, spdlog::level::warn);
  EXPECT_TRUE(defaults.network_interface.empty());
  EXPECT_FALSE(defaults.hostname.empty());

  const Options o = test::options_from({{"HVDRUN_RENDEZVOUS_ADDR", "127.0.0.1:5000"},
                                        {"HVDRUN_SECRET", "abc"},
                                        {"HVDRUN_SLOT", "3"},
                                        {"HVDRUN_HOSTNAME", "node7"},
                                        {"HVDRUN_TIMEOUT", "0.25"},
                                        {"HVDRUN_START_TIMEOUT", "90"},
                                        {"HVDRUN_LOG_LEVEL", "debug"},
                                        {"HVDRUN_NETWORK_INTERFACE", "eth1"}});
  EXPECT_EQ(o.rendezvous, "127.0.0.1:5000");
  EXPECT_EQ(o.secret, "abc");
  EXPECT_EQ(o.slot, 3u);
  EXPECT_EQ(o.hostname, "node7");
  EXPECT_EQ(o.timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(o.start_timeout, std::chrono::seconds(90));
  EXPECT_EQ(o.log_level, spdlog::level::debug);
  EXPECT_EQ(o.network_interface, "eth1");
}

TEST(Options, MalformedValuesNameVariableAndValue) {
  const auto message = [](const std::map<std::string, std::string>& vars) -> std::string {
    try {
      test::options_from(vars);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message({{"HVDRUN_TIMEOUT", "-1"}}).find("HVDRUN_TIMEOUT='-1'"), std::string::npos);
  EXPECT_NE(message({{"HVDRUN_START_TIMEOUT", "10s"}}).find("HVDRUN_START_TIMEOUT='10s'"),
            std::string::npos);
  EXPECT_NE(message({{"HVDRUN_LOG_LEVEL", "loud"}}).find("HVDRUN_LOG_LEVEL='loud'"),
            std::string::npos);
  const std::map<std::string, std::string> job{{"HVDRUN_RENDEZVOUS_ADDR", "127.0.0.1:1"},
                                               {"HVDRUN_SECRET", "s"}};
  auto bad_slot = job;
  bad_slot["HVDRUN_SLOT"] = "x1";
  EXPECT_NE(message(bad_slot).find("HVDRUN_SLOT='x1'"), std::string::npos);
  EXPECT_NE(message(job).find("HVDRUN_SLOT is not set"), std::string::npos);
  auto no_secret = job;
  no_secret.erase("HVDRUN_SECRET");
  no_secret["HVDRUN_SLOT"] = "0";
  EXPECT_NE(message(no_secret).find("HVDRUN_SECRET is not set"), std::string::npos);
}

TEST(Job, RanksJoinThroughTheRendezvousAndReduce) {
  constexpr int n = 3;
  ServerThread server(n, std::chrono::seconds(10));
  const std::uint16_t port = server.port();
  const auto errors = test::run_ranks(n, [&](int slot) {
    Runtime job(test::job_options(port, slot));
    ASSERT_NE(job.client(), nullptr);
    const Topology& t = job.communicator().topology();
    EXPECT_EQ(t.rank, slot);
    EXPECT_EQ(t.size, n);
    EXPECT_EQ(t.local_rank, slot);
    EXPECT_EQ(t.local_size, n);
    std::int64_t value = t.rank + 1;
    job.communicator().allreduce(&value, &value, 1, DataType::kInt64, ReduceOp::kProduct);
    EXPECT_EQ(value, 6);
  });
  for (const auto& e : errors) EXPECT_EQ(e, nullptr) << test::what(e);
}

TEST(Job, UnreachableRendezvousNamesAddressAndSlot) {
  // A port with nothing listening: bind one, remember it, close it.
  std::uint16_t port = 0;
  {
    tcp::Listener l = tcp::Listener::bind("127.0.0.1", 0);
    port = l.port();
  }
  Options options;
  options.rendezvous = "127.0.0.1:" + std::to_string(port);
  options.secret = "s";
  options.slot = 5;
  options.start_timeout = std::chrono::milliseconds(300);
  try {
    Runtime job(options);
    FAIL() << "joined a job with no server";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(
        m.rfind("hvdrun::init (rendezvous 127.0.0.1:" + std::to_string(port) + ", slot 5): ", 0),
        0u)
        << m;
  }
}

}  // namespace
}  // namespace hvdrun
