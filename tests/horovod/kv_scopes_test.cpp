// KvScopes without sockets: Horovod's planned-scope clearing (global, local_<host>,
// cross_<local_rank>), ad-hoc scopes (process sets, anything else), the byte cap, reset,
// the request path rule, and the per-limit log rate limiter.
#include "launcher/horovod/kv_scopes.h"

#include <gtest/gtest.h>

#include "launcher/horovod/kv_log.h"

namespace hvdrun::launcher::horovod {
namespace {

constexpr std::size_t kNoCap = std::size_t{1} << 40;

KvPlan global_plan(int size) {
  KvPlan plan;
  plan.global_size = size;
  return plan;
}

std::string value_of(const KvScopes& store, std::string_view scope, std::string_view key) {
  auto v = store.get(scope, key);
  return v ? *v : "<absent>";
}

TEST(KvScopes, GlobalScopeIsClearedWhenTheLastRankDeletes) {
  KvScopes store(global_plan(2), kNoCap);
  ASSERT_EQ(store.put("global", "rank_0", "host-a"), KvPutResult::kStored);
  ASSERT_EQ(store.put("global", "rank_1", "host-b"), KvPutResult::kStored);
  ASSERT_EQ(store.put("global", "0", std::string("\0\x01", 2)), KvPutResult::kStored);
  ASSERT_EQ(store.put("global", "1", "addr1"), KvPutResult::kStored);

  EXPECT_EQ(store.remove("global", "0"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.keys_in("global"), 4u);  // rank 1 may still read rank 0's address
  EXPECT_EQ(value_of(store, "global", "0"), std::string("\0\x01", 2));
  EXPECT_EQ(store.finished_in("global"), 1u);

  EXPECT_EQ(store.remove("global", "1"), KvDeleteResult::kScopeCleared);
  EXPECT_EQ(store.keys_in("global"), 0u);
  EXPECT_EQ(store.get("global", "1"), nullptr);
  EXPECT_EQ(store.finished_in("global"), 0u);
  EXPECT_EQ(store.stored_bytes(), 0u);
  EXPECT_EQ(store.stored_keys(), 0u);
  EXPECT_EQ(store.planned_size("global"), 2);  // stays planned for the next round

  // A second round (hvd.init() again with the same ranks) works the same way.
  store.put("global", "0", "again");
  EXPECT_EQ(store.remove("global", "1"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.remove("global", "0"), KvDeleteResult::kScopeCleared);
  EXPECT_EQ(store.stored_keys(), 0u);
}

TEST(KvScopes, ARepeatedDeleteCountsOnce) {
  KvScopes store(global_plan(2), kNoCap);
  store.put("global", "0", "a");
  EXPECT_EQ(store.remove("global", "0"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.remove("global", "0"), KvDeleteResult::kRecorded);  // a client retry
  EXPECT_EQ(value_of(store, "global", "0"), "a");
  EXPECT_EQ(store.remove("global", "1"), KvDeleteResult::kScopeCleared);
}

TEST(KvScopes, LocalAndCrossScopesTakeTheirSizesFromThePlan) {
  KvPlan plan;
  plan.global_size = 3;
  plan.local_sizes = {{"node-a", 2}, {"node-b", 1}};
  plan.cross_sizes = {{0, 2}, {1, 1}};
  KvScopes store(plan, kNoCap);
  EXPECT_EQ(store.planned_size("local_node-a"), 2);
  EXPECT_EQ(store.planned_size("local_node-b"), 1);
  EXPECT_EQ(store.planned_size("cross_0"), 2);
  EXPECT_EQ(store.planned_size("cross_1"), 1);
  EXPECT_EQ(store.planned_size("local_node-c"), 0);

  for (const char* scope : {"local_node-a", "local_node-b", "cross_0", "cross_1"}) {
    store.put(scope, "rank_0", "h");
    store.put(scope, "0", "x");
  }
  // Size-1 scopes clear on their one DELETE.
  EXPECT_EQ(store.remove("local_node-b", "0"), KvDeleteResult::kScopeCleared);
  EXPECT_EQ(store.remove("cross_1", "0"), KvDeleteResult::kScopeCleared);
  EXPECT_EQ(store.keys_in("local_node-b"), 0u);
  EXPECT_EQ(store.keys_in("cross_1"), 0u);
  // Size-2 scopes need both members.
  EXPECT_EQ(store.remove("local_node-a", "0"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.remove("cross_0", "0"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.keys_in("local_node-a"), 2u);
  EXPECT_EQ(store.remove("local_node-a", "1"), KvDeleteResult::kScopeCleared);
  EXPECT_EQ(store.remove("cross_0", "1"), KvDeleteResult::kScopeCleared);
  EXPECT_EQ(store.stored_keys(), 0u);
  EXPECT_EQ(store.stored_bytes(), 0u);
}

TEST(KvScopes, FinishedListsAreKeptPerScope) {
  KvPlan plan;
  plan.global_size = 2;
  plan.local_sizes = {{"n", 2}};
  KvScopes store(plan, kNoCap);
  store.put("local_n", "0", "x");
  EXPECT_EQ(store.remove("local_n", "0"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.remove("global", "0"), KvDeleteResult::kRecorded);
  EXPECT_EQ(store.remove("global", "1"), KvDeleteResult::kScopeCleared);
  // Clearing "global" left local_n's finished list alone.
  EXPECT_EQ(store.finished_in("local_n"), 1u);
  EXPECT_EQ(store.remove("local_n", "1"), KvDeleteResult::kScopeCleared);
}

TEST(KvScopes, AdHocScopesDeleteKeyByKeyAndVanishWhenEmpty) {
  KvScopes store(global_plan(2), kNoCap);
  store.put("custom", "a", "1");
  store.put("custom", "b", "22");
  EXPECT_EQ(store.planned_size("custom"), 0);
  EXPECT_EQ(store.remove("custom", "a"), KvDeleteResult::kKeyRemoved);
  EXPECT_EQ(store.get("custom", "a"), nullptr);
  EXPECT_EQ(value_of(store, "custom", "b"), "22");
  EXPECT_EQ(store.remove("custom", "a"), KvDeleteResult::kNoSuchKey);
  EXPECT_TRUE(store.has_scope("custom"));
  EXPECT_EQ(store.remove("custom", "b"), KvDeleteResult::kKeyRemoved);
  EXPECT_FALSE(store.has_scope("custom"));
  EXPECT_EQ(store.remove("never", "x"), KvDeleteResult::kNoSuchKey);
  EXPECT_EQ(store.stored_bytes(), 0u);
}

TEST(KvScopes, ProcessSetScopesAreAdHoc) {
  KvPlan plan;
  plan.global_size = 2;
  plan.local_sizes = {{"node0", 2}};
  plan.cross_sizes = {{0, 1}};
  KvScopes store(plan, kNoCap);
  for (const char* scope : {"global_process_set_hash_ab12", "local_node0_process_set_hash_ab12",
                            "cross_0_process_set_hash_ab12"}) {
    SCOPED_TRACE(scope);
    EXPECT_EQ(store.put(scope, "rank_0", "node0"), KvPutResult::kStored);
    EXPECT_EQ(store.put(scope, "0", "blob"), KvPutResult::kStored);
    EXPECT_EQ(store.planned_size(scope), 0);
    EXPECT_EQ(store.remove(scope, "0"), KvDeleteResult::kKeyRemoved);
    EXPECT_EQ(store.get(scope, "0"), nullptr);
    EXPECT_EQ(value_of(store, scope, "rank_0"), "node0");
    EXPECT_EQ(store.remove(scope, "rank_0"), KvDeleteResult::kKeyRemoved);
    EXPECT_FALSE(store.has_scope(scope));
  }
}

TEST(KvScopes, AnyScopeAndKeyBytesAreAccepted) {
  KvScopes store({}, kNoCap);  // no plan: "global" is ad-hoc too
  const std::string binary("\0\xff\r\n", 4);
  EXPECT_EQ(store.put("global", "host:0", binary), KvPutResult::kStored);
  EXPECT_EQ(store.put("a%3Ab", "k", "encoded"), KvPutResult::kStored);
  EXPECT_EQ(store.put("a:b", "k", "plain"), KvPutResult::kStored);
  EXPECT_EQ(value_of(store, "global", "host:0"), binary);
  EXPECT_EQ(value_of(store, "a%3Ab", "k"), "encoded");
  EXPECT_EQ(value_of(store, "a:b", "k"), "plain");
  EXPECT_EQ(store.put("s", "empty", ""), KvPutResult::kStored);
  EXPECT_EQ(value_of(store, "s", "empty"), "");
  EXPECT_EQ(store.remove("global", "host:0"), KvDeleteResult::kKeyRemoved);
}

TEST(KvScopes, AZeroSizeInThePlanLeavesTheScopeAdHoc) {
  KvPlan plan;
  plan.local_sizes = {{"n", 0}};
  KvScopes store(plan, kNoCap);
  EXPECT_EQ(store.planned_size("global"), 0);
  EXPECT_EQ(store.planned_size("local_n"), 0);
  store.put("local_n", "0", "x");
  EXPECT_EQ(store.remove("local_n", "0"), KvDeleteResult::kKeyRemoved);
}

TEST(KvScopes, TheByteCapCountsKeysAndValues) {
  constexpr std::size_t kOver = KvScopes::kEntryOverhead;
  KvScopes store({}, 100 + 2 * kOver);
  EXPECT_EQ(store.put("s", "k", std::string(49, 'a')), KvPutResult::kStored);  // 51 + overhead
  EXPECT_EQ(store.stored_bytes(), 51u + kOver);
  EXPECT_EQ(store.put("s", "k2", std::string(48, 'b')), KvPutResult::kOverCap);  // 102
  EXPECT_EQ(store.get("s", "k2"), nullptr);
  EXPECT_EQ(store.stored_bytes(), 51u + kOver);
  EXPECT_EQ(store.put("s", "k2", std::string(46, 'b')), KvPutResult::kStored);  // 100
  EXPECT_EQ(store.stored_bytes(), 100u + 2 * kOver);
  // A replacement is charged the difference only.
  EXPECT_EQ(store.put("s", "k", std::string(48, 'c')), KvPutResult::kStored);  // 99
  EXPECT_EQ(store.put("s", "k", std::string(51, 'd')), KvPutResult::kOverCap);
  EXPECT_EQ(value_of(store, "s", "k"), std::string(48, 'c'));  // a refused PUT changes nothing
  EXPECT_EQ(store.put("t", "x", std::string(200, 'e')), KvPutResult::kOverCap);
  EXPECT_FALSE(store.has_scope("t"));
  EXPECT_EQ(store.stored_bytes(), 99u + 2 * kOver);
  // Deleting gives the room back.
  store.remove("s", "k");
  EXPECT_EQ(store.stored_bytes(), 49u + kOver);
  // The scope name counts: a long name with an empty value is not free.
  KvScopes small({}, 1000);
  EXPECT_EQ(small.put(std::string(2000, 's'), "k", ""), KvPutResult::kOverCap);
}

TEST(KvScopes, ClearingAPlannedScopeGivesItsBytesBack) {
  KvScopes store(global_plan(1), KvScopes::entry_cost("global", "0", 9));
  EXPECT_EQ(store.put("global", "0", "123456789"), KvPutResult::kStored);  // all of the cap
  EXPECT_EQ(store.put("other", "k", ""), KvPutResult::kOverCap);
  store.remove("global", "0");
  EXPECT_EQ(store.stored_bytes(), 0u);
  EXPECT_EQ(store.put("other", "k", "x"), KvPutResult::kStored);
}

TEST(KvScopes, ResetWipesEverythingAndTakesTheNewPlan) {
  KvScopes store(global_plan(2), kNoCap);
  store.put("global", "0", "x");
  store.remove("global", "0");
  store.put("adhoc", "k", "v");
  KvPlan next;
  next.global_size = 1;
  next.local_sizes = {{"n", 1}};
  store.reset(next);
  EXPECT_EQ(store.stored_keys(), 0u);
  EXPECT_EQ(store.stored_bytes(), 0u);
  EXPECT_FALSE(store.has_scope("adhoc"));
  EXPECT_EQ(store.finished_in("global"), 0u);
  EXPECT_EQ(store.planned_size("global"), 1);
  EXPECT_EQ(store.planned_size("local_n"), 1);
  store.put("global", "0", "y");
  EXPECT_EQ(store.remove("global", "0"), KvDeleteResult::kScopeCleared);
}

TEST(KvPath, SplitsIntoExactlyScopeAndKey) {
  auto p = parse_kv_path("/global/rank_0");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->scope, "global");
  EXPECT_EQ(p->key, "rank_0");
  p = parse_kv_path("/rank_and_size/node-1.example:3");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->key, "node-1.example:3");
  p = parse_kv_path("/a%2Fb/c%3A");  // no URL decoding
  ASSERT_TRUE(p);
  EXPECT_EQ(p->scope, "a%2Fb");
  EXPECT_EQ(p->key, "c%3A");
  for (const char* bad :
       {"", "/", "//", "/a", "/a/", "//b", "/a/b/", "/a/b/c", "a/b", "http://h/a/b", "*"}) {
    EXPECT_FALSE(parse_kv_path(bad)) << bad;
  }
}

TEST(LimitLog, OneLinePerLimitPerSecondWithACountOfTheRest) {
  LimitLog log;
  const auto t0 = LimitLog::Clock::time_point{} + std::chrono::hours(1);
  std::uint64_t held = 99;
  EXPECT_TRUE(log.admit(Limit::kBodyBytes, held, t0));
  EXPECT_EQ(held, 0u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(log.admit(Limit::kBodyBytes, held, t0 + std::chrono::milliseconds(100 * i)));
  }
  EXPECT_TRUE(log.admit(Limit::kHeaderBytes, held, t0));  // another limit has its own budget
  EXPECT_TRUE(log.admit(Limit::kBodyBytes, held, t0 + std::chrono::seconds(1)));
  EXPECT_EQ(held, 5u);
  EXPECT_EQ(log.hits(Limit::kBodyBytes), 7u);
  EXPECT_EQ(log.hits(Limit::kHeaderBytes), 1u);
  EXPECT_EQ(log.hits(Limit::kStoredBytes), 0u);
}

}  // namespace
}  // namespace hvdrun::launcher::horovod
