// RankQueries: elastic Horovod's rank_and_size answers, by the names survivors ask with, given
// together once every survivor that will ask has asked.
#include "launcher/horovod/rank_queries.h"

#include <gtest/gtest.h>

namespace hvdrun::launcher::horovod {
namespace {

Slot slot(int rank, int local_rank, int local_size, int cross_rank, int cross_size,
          const std::string& host) {
  Slot s;
  s.rank = rank;
  s.local_rank = local_rank;
  s.local_size = local_size;
  s.cross_rank = cross_rank;
  s.cross_size = cross_size;
  s.host = host;
  return s;
}

using Due = std::vector<std::pair<std::string, std::string>>;

// `name` asks: its own answer if that is due now.
std::optional<std::string> ask_alone(RankQueries& queries, const std::string& name) {
  if (!queries.answers(name)) return std::nullopt;
  for (auto& [who, text] : queries.ask({name})) {
    if (who == name) return text;
  }
  return std::nullopt;
}

TEST(RankQueries, EachSurvivorIsAnsweredOnceByItsPreviousName) {
  RankQueries queries;
  EXPECT_FALSE(queries.answers("a:0"));  // no generation yet
  queries.next_generation({{"a:1", slot(0, 0, 1, 0, 2, "a")}, {"b:0", slot(1, 0, 1, 1, 2, "b")}},
                          2);
  EXPECT_EQ(queries.pending(), 2u);
  EXPECT_FALSE(queries.answers("a:0"));                 // not a survivor
  EXPECT_EQ(ask_alone(queries, "a:1"), "0,2,0,1,0,2");  // none registered: nobody is awaited
  EXPECT_FALSE(queries.answers("a:1"));                 // once
  EXPECT_EQ(ask_alone(queries, "b:0"), "1,2,0,1,1,2");
  EXPECT_EQ(queries.pending(), 0u);
}

// Survivors that register after their generation was formed (they entered hvd.elastic.run
// late) are awaited as well: the first to ask is answered with the last.
TEST(RankQueries, ASurvivorRegisteredAfterTheGenerationFormedIsAwaited) {
  RankQueries queries;
  queries.next_generation({{"a:1", slot(0, 0, 2, 0, 1, "a")}, {"a:2", slot(1, 1, 2, 0, 1, "a")}},
                          2);
  queries.registered("a:2");
  queries.registered("a:1");
  EXPECT_EQ(queries.awaited(), 2u);
  EXPECT_EQ(ask_alone(queries, "a:2"), std::nullopt);  // a:1 has not asked
  const auto due = queries.ask({"a:1"});
  EXPECT_EQ(due, (Due{{"a:1", "0,2,0,2,0,1"}, {"a:2", "1,2,1,2,0,1"}}));
}

// Registered survivors are awaited: nobody is answered until the last of them asks, then
// every asker is; a survivor that dies before asking is left out of the next generation,
// which the others (answered by then) are not kept waiting for.
TEST(RankQueries, AnswersWaitForEveryRegisteredSurvivor) {
  RankQueries queries;
  for (const char* name : {"a:0", "a:1", "b:0"}) queries.registered(name);
  queries.next_generation({{"a:0", slot(0, 0, 2, 0, 2, "a")},
                           {"a:1", slot(1, 1, 2, 0, 2, "a")},
                           {"b:0", slot(2, 0, 1, 1, 2, "b")}},
                          3);
  EXPECT_EQ(queries.awaited(), 3u);
  EXPECT_EQ(queries.ask({"a:1"}), Due{});
  EXPECT_EQ(queries.ask({"a:0"}), Due{});
  EXPECT_EQ(queries.awaited(), 1u);
  // b:0 died before asking: the launcher forms the next generation without it.
  queries.next_generation({{"a:0", slot(0, 0, 2, 0, 1, "a")}, {"a:1", slot(1, 1, 2, 0, 1, "a")}},
                          2);
  EXPECT_EQ(queries.awaited(), 2u);  // b:0 is no longer awaited
  EXPECT_EQ(queries.ask({"a:0"}), Due{});
  EXPECT_EQ(queries.ask({"a:1"}), (Due{{"a:0", "0,2,0,2,0,1"}, {"a:1", "1,2,1,2,0,1"}}));
}

// Answered survivors are awaited at the next re-formation under their new names; a worker
// that registers later (a newcomer in hvd.elastic.run) is awaited too, one that did not
// register is not.
TEST(RankQueries, AnsweredAndNewlyRegisteredWorkersAreAwaitedNextTime) {
  RankQueries queries;
  queries.registered("a:1");
  queries.next_generation({{"a:1", slot(0, 0, 1, 0, 1, "a")}}, 1);
  EXPECT_EQ(ask_alone(queries, "a:1"), "0,1,0,1,0,1");  // now called "a:0"
  queries.registered("b:0");                            // a newcomer of that generation
  queries.next_generation({{"a:0", slot(0, 0, 1, 0, 3, "a")},
                           {"b:0", slot(1, 0, 1, 1, 3, "b")},
                           {"c:0", slot(2, 0, 1, 2, 3, "c")}},
                          3);
  EXPECT_EQ(queries.awaited(), 2u);  // a:0 and b:0; c:0 never registered
  EXPECT_EQ(queries.ask({"b:0"}), Due{});
  EXPECT_EQ(queries.ask({"a:0"}), (Due{{"a:0", "0,3,0,1,0,3"}, {"b:0", "1,3,0,1,1,3"}}));
  EXPECT_EQ(ask_alone(queries, "c:0"), "2,3,0,1,2,3");  // after the release: at once
}

// Answers released one by one (nobody awaited) keep every survivor's new name, also when one
// survivor's new name is the old name of one released after it.
TEST(RankQueries, SeparateReleasesKeepEveryNewName) {
  RankQueries queries;
  queries.next_generation({{"h:1", slot(0, 0, 2, 0, 1, "h")}, {"h:2", slot(1, 1, 2, 0, 1, "h")}},
                          2);
  EXPECT_EQ(ask_alone(queries, "h:2"), "1,2,1,2,0,1");  // now "h:1"
  EXPECT_EQ(ask_alone(queries, "h:1"), "0,2,0,2,0,1");  // now "h:0"
  queries.next_generation({{"h:0", slot(0, 0, 2, 0, 1, "h")}, {"h:1", slot(1, 1, 2, 0, 1, "h")}},
                          2);
  EXPECT_EQ(queries.awaited(), 2u);
}

// Queries asked together are released together.
TEST(RankQueries, NamesAskedTogetherAreReleasedTogether) {
  RankQueries queries;
  queries.registered("h:0");
  queries.next_generation({{"h:0", slot(0, 0, 2, 0, 1, "h")}, {"h:1", slot(1, 1, 2, 0, 1, "h")}},
                          2);
  EXPECT_EQ(queries.ask({"h:1", "h:0"}), (Due{{"h:0", "0,2,0,2,0,1"}, {"h:1", "1,2,1,2,0,1"}}));
}

// A survivor that did not ask in generation 1 still goes by its name of generation 0, and
// generation 2's answer for it is filed under that name; the unasked answer is dropped.
TEST(RankQueries, ASurvivorThatDidNotAskKeepsItsOlderName) {
  RankQueries queries;
  queries.next_generation({{"a:2", slot(0, 1, 2, 0, 1, "a")}, {"a:0", slot(1, 0, 2, 0, 1, "a")}},
                          2);
  EXPECT_EQ(ask_alone(queries, "a:0"), "1,2,0,2,0,1");  // now "a:0" again; "a:2" did not ask
  // Generation 2 names them by their generation-1 slots: "a:1" and "a:0".
  queries.next_generation({{"a:1", slot(0, 0, 1, 0, 1, "a")}}, 1);
  EXPECT_FALSE(queries.answers("a:1"));  // the slow one never learnt "a:1"
  EXPECT_EQ(ask_alone(queries, "a:2"), "0,1,0,1,0,1");
}

// When a slow survivor's older name is also a current survivor's name, the current one is
// answered: its query is the one that can be right.
TEST(RankQueries, ANameTakenByACurrentSurvivorIsItsAnswer) {
  RankQueries queries;
  // Generation 1: the worker called "a:0" becomes local rank 1; the one called "a:1" becomes 0.
  queries.next_generation({{"a:0", slot(1, 1, 2, 0, 1, "a")}, {"a:1", slot(0, 0, 2, 0, 1, "a")}},
                          2);
  EXPECT_EQ(ask_alone(queries, "a:1"), "0,2,0,2,0,1");  // it is "a:0" now; the other did not ask
  queries.next_generation({{"a:0", slot(0, 0, 2, 0, 1, "a")}, {"a:1", slot(1, 1, 2, 0, 1, "a")}},
                          2);
  EXPECT_EQ(ask_alone(queries, "a:0"), "0,2,0,2,0,1");
  EXPECT_EQ(queries.pending(), 0u);
}

}  // namespace
}  // namespace hvdrun::launcher::horovod
