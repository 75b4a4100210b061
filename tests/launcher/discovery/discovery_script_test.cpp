// DiscoveryScript: the script's output is parsed (and refined) on a thread of its own; `done`
// comes on the io thread, and never after a cancel or the runner's end.
#include "launcher/discovery/discovery_script.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace hvdrun::launcher {
namespace {

using namespace std::chrono_literals;

ElasticSpec spec_of(const std::string& script) {
  ElasticSpec spec;
  spec.discovery_script = script;
  return spec;
}

// Runs `io` until `done` or 10 s.
void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(10ms);
  }
}

// One run of `script` with `refine`, to its end (10 s at most); `done_on`: the thread of `done`.
std::optional<DiscoveryResult> run_once(const std::string& command, DiscoveryScript::Refine refine,
                                        std::thread::id* done_on = nullptr) {
  boost::asio::io_context io;
  Watchdog watchdog;
  const ElasticSpec spec = spec_of(command);
  DiscoveryScript script(io, watchdog, spec, {});
  std::optional<DiscoveryResult> result;
  script.run(
      [&](DiscoveryResult r) {
        if (done_on) *done_on = std::this_thread::get_id();
        result = std::move(r);
      },
      std::move(refine));
  run_until(io, [&] { return result.has_value(); });
  return result;
}

TEST(DiscoveryScript, TheOutputIsParsedOffTheIoThreadAndDoneComesOnIt) {
  std::thread::id done_on, refined_on;
  const auto result = run_once(
      "printf 'node-a:2\\nnode-b\\n'",
      [&](DiscoveryResult& r) {
        refined_on = std::this_thread::get_id();
        r.note = std::to_string(r.hosts.size()) + " hosts";
      },
      &done_on);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->error, "");
  ASSERT_EQ(result->hosts.size(), 2u);
  EXPECT_EQ(result->hosts[0].name, "node-a");
  EXPECT_EQ(result->hosts[0].slots, 2);
  EXPECT_EQ(result->hosts[1].slots, 1);
  EXPECT_EQ(result->note, "2 hosts");
  EXPECT_EQ(done_on, std::this_thread::get_id());
  EXPECT_NE(refined_on, std::this_thread::get_id());
}

TEST(DiscoveryScript, AnOutputThatDoesNotParseIsAFailure) {
  const auto result = run_once("echo 'node-a:x'", {});
  ASSERT_TRUE(result);
  EXPECT_NE(result->error.find("node-a:x"), std::string::npos) << result->error;
}

// A cancel, or the runner's end, while the parse runs: `done` is never called.
TEST(DiscoveryScript, NoDoneAfterACancelOrTheEndDuringTheParse) {
  for (const bool destroy : {false, true}) {
    boost::asio::io_context io;
    Watchdog watchdog;
    const ElasticSpec spec = spec_of("echo node-a");
    auto script =
        std::make_unique<DiscoveryScript>(io, watchdog, spec, std::map<std::string, std::string>{});
    std::atomic<bool> parsing{false};
    std::promise<void> release;
    auto released = release.get_future().share();
    bool done = false;
    script->run([&](DiscoveryResult) { done = true; },
                [&](DiscoveryResult&) {
                  parsing = true;
                  released.wait();
                });
    run_until(io, [&] { return parsing.load(); });
    ASSERT_TRUE(parsing);
    std::thread later([&] {
      std::this_thread::sleep_for(50ms);
      release.set_value();
    });
    if (destroy) {
      script.reset();  // waits for the parse
    } else {
      script->cancel();
    }
    later.join();
    io.restart();
    io.run_for(300ms);  // long enough for a stray `done`
    EXPECT_FALSE(done) << (destroy ? "destroyed" : "cancelled");
  }
}

}  // namespace
}  // namespace hvdrun::launcher
