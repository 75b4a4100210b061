// The Horovod KV server in an elastic job: a survivor's GET /rank_and_size is held until the
// next generation (reset()) answers it, once; a worker the generation leaves out is told it is
// not in the job; a hold is bounded, and closing the server ends it.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "tests/horovod/horovod_http_client.h"
#include "tests/horovod/kv_server_thread.h"

namespace hvdrun::launcher::horovod::test {
namespace {

using Clock = std::chrono::steady_clock;

// The plan of a generation of one worker on node0, which was "node0:1" in the one before.
KvPlan one_survivor_of_node0_1() {
  KvPlan plan = plan_of(make_slots(1, 1));
  hvdrun::Slot slot;
  slot.host = "node0";
  plan.survivors = {{"node0:1", slot}};
  return plan;
}

// The plan of a generation of two workers on node0: `first` takes rank 0, `second` rank 1.
KvPlan two_on_node0(const std::string& first, const std::string& second) {
  KvPlan plan = plan_of(make_slots(1, 2));
  hvdrun::Slot rank0;
  rank0.host = "node0";
  rank0.local_size = 2;
  hvdrun::Slot rank1 = rank0;
  rank1.rank = 1;
  rank1.local_rank = 1;
  plan.survivors = {{first, rank0}, {second, rank1}};
  return plan;
}

KvServerOptions elastic(std::chrono::milliseconds hold) {
  KvServerOptions options;
  options.rank_query_hold = hold;
  return options;
}

bool held_within(KvServerThread& server, std::size_t count, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (server.stats().held_queries < count) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(KvElastic, HeldQueriesAreAnsweredByTheNextGeneration) {
  LogCapture log;
  KvServerThread server(elastic(10s), plan_of(make_slots(1, 2)));
  auto survivor = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  auto left_out = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:0", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 2, 5s));
  EXPECT_EQ(survivor.wait_for(200ms), std::future_status::timeout);  // held, not answered
  server.reset(one_survivor_of_node0_1());
  const auto answer = survivor.get();
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, "0,1,0,1,0,1");
  EXPECT_EQ(answer.content_length, answer.body.size());
  EXPECT_EQ(left_out.get().body, "-1,-1,-1,-1,-1,-1");
  EXPECT_EQ(log.count("node0:0 asked for its place, but the next generation leaves it out"), 1u)
      << log.all();
  EXPECT_EQ(server.stats().held_queries, 0u);
  EXPECT_EQ(server.stats().elastic_queries, 0u);  // counts a static job's queries only
}

// Workers that registered (hvd.elastic.run's PUT /worker_addresses) are awaited: the first to
// ask is answered only when the other asks too.
TEST(KvElastic, AnswersWaitForEveryRegisteredSurvivor) {
  KvServerThread server(elastic(10s), plan_of(make_slots(1, 2)));
  EXPECT_EQ(http_request(server.port(), "PUT", "/worker_addresses/node0:0", "x").status, 200);
  EXPECT_EQ(http_request(server.port(), "PUT", "/worker_addresses/node0:1", "y").status, 200);
  server.reset(two_on_node0("node0:1", "node0:0"));  // they swap places
  auto early = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  EXPECT_EQ(early.wait_for(300ms), std::future_status::timeout);  // node0:0 has not asked
  const auto last = http_request(server.port(), "GET", "/rank_and_size/node0:0", {}, 10s);
  EXPECT_EQ(last.body, "1,2,1,2,0,1");
  EXPECT_EQ(early.get().body, "0,2,0,2,0,1");
}

// Every registered worker asking for a generation that has no answer for them (no worker
// exited) is reported; until the launcher says it re-forms, each further query reports it
// again, and the launcher's re-formation then answers them.
TEST(KvElastic, EveryRegisteredWorkerAskingIsReported) {
  std::atomic<int> calls{0};
  std::atomic<std::size_t> waiting{0};
  KvServerOptions options = elastic(10s);
  options.on_reform_asked = [&](std::size_t n) {
    waiting = n;
    return ++calls == 2;  // the launcher waits for a third worker the first time
  };
  KvServerThread server(options, plan_of(make_slots(1, 3)));
  for (const char* name : {"node0:0", "node0:1"}) {
    EXPECT_EQ(
        http_request(server.port(), "PUT", std::string("/worker_addresses/") + name, "x").status,
        200);
  }
  auto a = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:0", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  EXPECT_EQ(calls, 0);
  auto b = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 2, 5s));
  server.stats();  // every call made on the io thread before this one is done
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(waiting, 2u);
  auto c = std::async(std::launch::async, [&] {  // the third worker, which had not registered
    return http_request(server.port(), "GET", "/rank_and_size/node0:2", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 3, 5s));
  server.stats();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(waiting, 3u);
  KvPlan plan = plan_of(make_slots(1, 3));
  hvdrun::Slot slot;
  slot.host = "node0";
  slot.local_size = 3;
  for (int i = 0; i < 3; ++i) {
    slot.rank = slot.local_rank = i;
    plan.survivors["node0:" + std::to_string(i)] = slot;
  }
  server.reset(plan);
  EXPECT_EQ(a.get().body, "0,3,0,3,0,1");
  EXPECT_EQ(b.get().body, "1,3,1,3,0,1");
  EXPECT_EQ(c.get().body, "2,3,2,3,0,1");
  EXPECT_EQ(calls, 2);
}

// A survivor that asks after the generation formed is answered at once; asking again waits
// for the generation after.
TEST(KvElastic, AnAnswerIsGivenAtOnceAndOnlyOnce) {
  KvServerThread server(elastic(10s), plan_of(make_slots(1, 2)));
  server.reset(one_survivor_of_node0_1());
  const auto start = Clock::now();
  EXPECT_EQ(http_request(server.port(), "GET", "/rank_and_size/node0:1").body, "0,1,0,1,0,1");
  EXPECT_LT(Clock::now() - start, 2s);
  auto again = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  server.reset(plan_of(make_slots(1, 1)));  // a generation that does not have it
  EXPECT_EQ(again.get().body, "-1,-1,-1,-1,-1,-1");
}

TEST(KvElastic, AQueryHeldPastTheHoldIsAnswered503) {
  LogCapture log;
  KvServerThread server(elastic(300ms), plan_of(make_slots(1, 2)));
  const auto start = Clock::now();
  const auto r = http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  EXPECT_GE(Clock::now() - start, 300ms);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(server.stats().held_queries, 0u);
  EXPECT_EQ(log.count("worker node0:1 (127.0.0.1:"), 2u) << log.all();  // it waits; too long
  EXPECT_EQ(log.count("asked for its place in the next generation, but none came within 300 ms"),
            1u)
      << log.all();
}

// A worker that asks again on a new connection (its first one broke unnoticed) is answered
// there; the older query's connection is closed.
TEST(KvElastic, TheNewestQueryOfANameIsTheOneAnswered) {
  LogCapture log;
  KvServerThread server(elastic(10s), plan_of(make_slots(1, 2)));
  auto first = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  auto second = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  EXPECT_EQ(first.get().status, 0);  // closed without an answer
  ASSERT_TRUE(held_within(server, 1, 5s));
  server.reset(one_survivor_of_node0_1());
  EXPECT_EQ(second.get().body, "0,1,0,1,0,1");
  EXPECT_EQ(log.count("worker node0:1 asked again from 127.0.0.1:"), 1u) << log.all();
}

TEST(KvElastic, ClosingTheServerEndsAHeldQuery) {
  KvServerThread server(elastic(30s), plan_of(make_slots(1, 2)));
  auto held = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/node0:1", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  const auto start = Clock::now();
  server.close();
  const auto r = held.get();
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_EQ(r.status, 0);  // closed without an answer
  EXPECT_FALSE(r.timed_out);
}

// A warm spare's query ("spare.<key>") outlives generations that do not have it, is answered
// by the one that does (after its survivors asked), and a dismissed spare is told it is not in
// the job, at once when it asks after the dismissal.
TEST(KvElastic, ASparesQueryWaitsAcrossGenerationsUntilItIsPromotedOrDismissed) {
  KvServerThread server(elastic(10s), plan_of(make_slots(1, 2)));
  auto spare = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/spare.5", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  server.reset(one_survivor_of_node0_1());  // a generation without it: it goes on waiting
  EXPECT_EQ(spare.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(server.stats().held_queries, 1u);
  KvPlan plan = plan_of(make_slots(1, 2));
  hvdrun::Slot promoted;
  promoted.rank = 1;
  promoted.local_rank = 1;
  promoted.local_size = 2;
  promoted.host = "node0";
  plan.survivors = {{"spare.5", promoted}};
  server.reset(plan);
  const auto answer = spare.get();
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, "1,2,1,2,0,1");

  auto other = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/spare.6", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  server.dismiss_spare("spare.6");
  EXPECT_EQ(other.get().body, "-1,-1,-1,-1,-1,-1");
  server.dismiss_spare("spare.7");  // before it asks
  EXPECT_EQ(http_request(server.port(), "GET", "/rank_and_size/spare.7", {}, 5s).body,
            "-1,-1,-1,-1,-1,-1");
  EXPECT_EQ(server.stats().held_queries, 0u);
}

// A spare's query is held for spare_query_hold only, then answered 503: the spare asks again at
// once, and those queries are its heartbeats; its first one says that it waits. One that stops
// asking is silent after the limit; a dismissed one is no longer watched.
TEST(KvElastic, ASpareThatStopsAskingIsSilentAfterTheLimit) {
  KvServerOptions options = elastic(10s);
  options.spare_query_hold = 100ms;
  std::atomic<int> waiting{0};
  options.on_spare_waiting = [&](const std::string& name) {
    if (name == "spare.5") ++waiting;
  };
  KvServerThread server(options, plan_of(make_slots(1, 2)));
  const auto first = Clock::now();
  const auto answer = http_request(server.port(), "GET", "/rank_and_size/spare.5", {}, 5s);
  EXPECT_EQ(answer.status, 503);
  EXPECT_LT(Clock::now() - first, 5s);  // the spare's hold, not the rank queries' 10 s
  EXPECT_EQ(http_request(server.port(), "GET", "/rank_and_size/spare.5", {}, 5s).status, 503);
  EXPECT_EQ(waiting.load(), 1) << "said once, at its first query";
  EXPECT_TRUE(server.silent_spares(2s).empty());  // it was seen just now
  std::this_thread::sleep_for(300ms);             // it does not ask again
  EXPECT_EQ(server.silent_spares(200ms), std::vector<std::string>{"spare.5"});
  server.dismiss_spare("spare.5");
  EXPECT_TRUE(server.silent_spares(1ms).empty());  // dismissed: no longer watched
}

// A spare whose query is held is not silent, however long ago it first asked.
TEST(KvElastic, ASpareWhoseQueryIsHeldIsNotSilent) {
  KvServerOptions options = elastic(10s);
  options.spare_query_hold = 5s;
  KvServerThread server(options, plan_of(make_slots(1, 2)));
  auto spare = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/spare.5", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(server.silent_spares(1ms).empty());
  server.dismiss_spare("spare.5");
  EXPECT_EQ(spare.get().body, "-1,-1,-1,-1,-1,-1");
}

// A spare promoted into a generation that still waits for a survivor keeps its query held past
// its short hold (no 503: the answer is on the way), and gets its place with the survivor's.
TEST(KvElastic, APromotedSparesQueryIsHeldUntilItsGenerationAnswers) {
  KvServerOptions options = elastic(10s);
  options.spare_query_hold = 100ms;
  KvServerThread server(options, plan_of(make_slots(1, 2)));
  EXPECT_EQ(http_request(server.port(), "PUT", "/worker_addresses/node0:0", "x").status, 200);
  auto spare = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/rank_and_size/spare.5", {}, 10s);
  });
  ASSERT_TRUE(held_within(server, 1, 5s));
  server.reset(two_on_node0("node0:0", "spare.5"));
  EXPECT_EQ(spare.wait_for(400ms), std::future_status::timeout);  // held past 100 ms
  EXPECT_EQ(http_request(server.port(), "GET", "/rank_and_size/node0:0", {}, 10s).body,
            "0,2,0,2,0,1");
  const auto answer = spare.get();
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, "1,2,1,2,0,1");
}

}  // namespace
}  // namespace hvdrun::launcher::horovod::test
