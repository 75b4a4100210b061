// AbortSignal interrupts the runtime's blocking waits from outside: a ring collective waiting
// on a silent peer, the ring setup waiting for its previous rank, and the device completion
// loop (poll_until, the part of the NCCL path that runs without a GPU) all end within
// milliseconds of raise(), long before their timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "hvdrun/error.h"
#include "tests/worker-runtime/ring_harness.h"
#include "worker-runtime/abort_signal.h"
#include "worker-runtime/poll_until.h"

namespace hvdrun::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Raises `signal` after `delay` on its own thread; joins on destruction.
class RaiseLater {
 public:
  RaiseLater(AbortSignal& signal, std::chrono::milliseconds delay)
      : thread_([&signal, delay] {
          std::this_thread::sleep_for(delay);
          signal.raise("generation 0 broke: rank 1 failed");
        }) {}
  ~RaiseLater() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST(AbortSignal, RaiseKeepsTheFirstReasonAndResetClears) {
  AbortSignal signal;
  EXPECT_FALSE(signal.raised());
  EXPECT_NO_THROW(signal.check("allreduce"));
  signal.raise("first");
  signal.raise("second");
  EXPECT_TRUE(signal.raised());
  EXPECT_EQ(signal.reason(), "first");
  try {
    signal.check("allreduce");
    FAIL() << "no AbortedError";
  } catch (const AbortedError& e) {
    EXPECT_STREQ(e.what(), "allreduce: aborted: first");
  }
  signal.reset();
  EXPECT_FALSE(signal.raised());
  EXPECT_EQ(signal.reason(), "");
}

// Rank 0 waits in an allreduce that rank 1 never joins; the abort ends it at once, and the
// ring is unusable afterwards.
TEST(AbortSignal, InterruptsARingCollectiveWaitingOnASilentPeer) {
  auto rings = make_rings(2, 30s);
  AbortSignal signal;
  rings[0]->set_abort_signal(&signal);
  std::vector<float> data(1 << 18, 1.0f);
  const auto start = Clock::now();
  {
    RaiseLater raise(signal, 100ms);
    try {
      rings[0]->allreduce(data.data(), data.data(), data.size(), DataType::kFloat32,
                          ReduceOp::kSum);
      FAIL() << "the allreduce completed without rank 1";
    } catch (const AbortedError& e) {
      EXPECT_NE(std::string(e.what()).find("allreduce: aborted: generation 0 broke"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_LT(Clock::now() - start, 5s) << "the ring timeout is 30 s: the abort must end it";
  EXPECT_TRUE(rings[0]->broken());
  EXPECT_THROW(rings[0]->barrier(), Error);
}

TEST(AbortSignal, ARaisedSignalFailsTheNextCollectiveAtOnce) {
  auto rings = make_rings(2, 30s);
  AbortSignal signal;
  signal.raise("stop");
  rings[1]->set_abort_signal(&signal);
  EXPECT_THROW(rings[1]->barrier(), AbortedError);
}

// Rank 0 of a 2-rank ring whose rank 1 never connects: the setup's wait is interrupted.
TEST(AbortSignal, InterruptsTheRingSetup) {
  Listeners l = bind_listeners(2);
  AbortSignal signal;
  const auto start = Clock::now();
  RaiseLater raise(signal, 100ms);
  EXPECT_THROW(tcp::Ring(0, 2, test::addresses_of(l, 0), std::move(l.listeners[0]),
                         std::string(kSecret), 0, 30s, &signal),
               AbortedError);
  EXPECT_LT(Clock::now() - start, 5s);
}

// Rank 0 of a 2-rank ring whose rank 1 does not listen yet: the connect retries end at the
// abort, with its reason and the peer named.
TEST(AbortSignal, InterruptsTheRingSetupsConnectRetries) {
  Listeners l = bind_listeners(2);
  l.listeners[1] = tcp::Listener();  // closed: connecting to rank 1 is refused, and retried
  AbortSignal signal;
  const auto start = Clock::now();
  RaiseLater raise(signal, 100ms);
  try {
    tcp::Ring(0, 2, test::addresses_of(l, 0), std::move(l.listeners[0]), std::string(kSecret), 0,
              30s, &signal);
    ADD_FAILURE() << "the ring formed without rank 1";
  } catch (const AbortedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ring setup: connecting to rank 1"), std::string::npos) << what;
    EXPECT_NE(what.find("aborted: generation 0 broke: rank 1 failed"), std::string::npos) << what;
  }
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(PollUntil, EndsOnDoneDeadlineOrAbort) {
  EXPECT_EQ(poll_until(Clock::now() + 1s, nullptr, [] { return true; }), PollResult::kDone);
  EXPECT_EQ(poll_until(Clock::now() + 20ms, nullptr, [] { return false; }), PollResult::kTimedOut);
  AbortSignal signal;
  const auto start = Clock::now();
  RaiseLater raise(signal, 50ms);
  std::atomic<int> polls{0};
  EXPECT_EQ(poll_until(Clock::now() + 30s, &signal,
                       [&] {
                         ++polls;
                         return false;
                       }),
            PollResult::kAborted);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_GT(polls.load(), 1);
}

}  // namespace
}  // namespace hvdrun::test
