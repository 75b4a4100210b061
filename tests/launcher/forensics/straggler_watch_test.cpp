// StragglerWatch: --exclude-stragglers' decision from the collectives every rank timed.
#include "launcher/forensics/straggler_watch.h"

#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A complete collective of three ranks in which `late` arrived `by_us` after the others.
CollectiveGroup collective(std::uint32_t generation, std::uint32_t late, std::uint32_t by_us) {
  CollectiveGroup g;
  g.complete = true;
  for (std::uint32_t w = 0; w < 3; ++w) {
    rdzv::TimedCollective t;
    t.worker = w;
    t.rank = static_cast<int>(w);
    t.host = "node" + std::to_string(w);
    t.generation = generation;
    t.inside_us = 200 + (w == late ? 0 : by_us);
    g.members.push_back(t);
  }
  return g;
}

TEST(StragglerWatch, ARankLastInMostCollectivesByTheMarginIsTheStraggler) {
  StragglerWatch watch(milliseconds(10));
  for (std::size_t i = 0; i < StragglerWatch::kWindow - 1; ++i) {
    watch.add(collective(1, i % 8 == 0 ? 0 : 2, 20'000));
    EXPECT_FALSE(watch.verdict()) << "before the window is full";
  }
  watch.add(collective(1, 2, 20'000));
  const auto verdict = watch.verdict();
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->worker, 2u);
  EXPECT_EQ(verdict->host, "node2");
  EXPECT_EQ(verdict->last, 21u);
  EXPECT_EQ(verdict->median_lateness, microseconds(20'000));
  EXPECT_EQ(verdict->describe(),
            "rank 2 (host node2) arrived last in 21 of the last 24 collectives timed on every "
            "rank, late by 20.0 ms at the median");
}

TEST(StragglerWatch, LateByLessThanTheMarginIsNoStraggler) {
  StragglerWatch watch(milliseconds(50));
  for (std::size_t i = 0; i < StragglerWatch::kWindow; ++i) watch.add(collective(1, 2, 20'000));
  EXPECT_FALSE(watch.verdict());
}

TEST(StragglerWatch, RanksThatTakeTurnsBeingLastAreNoStragglers) {
  StragglerWatch watch(milliseconds(1));
  for (std::uint32_t i = 0; i < 3 * StragglerWatch::kWindow; ++i) {
    watch.add(collective(1, i % 3, 20'000));
  }
  EXPECT_FALSE(watch.verdict());
}

TEST(StragglerWatch, ANewGenerationStartsANewWindow) {
  StragglerWatch watch(milliseconds(1));
  for (std::size_t i = 0; i < StragglerWatch::kWindow; ++i) watch.add(collective(1, 2, 5'000));
  ASSERT_TRUE(watch.verdict());
  watch.add(collective(2, 1, 5'000));
  EXPECT_FALSE(watch.verdict());
  watch.add(collective(1, 2, 5'000));  // a late one of the old generation changes nothing
  EXPECT_FALSE(watch.verdict());
}

TEST(StragglerWatch, AfterActingOnAStragglerItsGenerationNoLongerCounts) {
  StragglerWatch watch(milliseconds(1));
  for (std::size_t i = 0; i < StragglerWatch::kWindow; ++i) watch.add(collective(3, 2, 5'000));
  ASSERT_TRUE(watch.verdict());
  watch.start_after(3);
  EXPECT_FALSE(watch.verdict());
  for (std::size_t i = 0; i < StragglerWatch::kWindow; ++i) watch.add(collective(3, 2, 5'000));
  EXPECT_FALSE(watch.verdict()) << "late groups of generation 3 are ignored";
  for (std::size_t i = 0; i < StragglerWatch::kWindow; ++i) watch.add(collective(4, 1, 5'000));
  ASSERT_TRUE(watch.verdict());
  EXPECT_EQ(watch.verdict()->worker, 1u);
}

TEST(StragglerWatch, IncompleteCollectivesSayNothing) {
  StragglerWatch watch(milliseconds(1));
  for (std::size_t i = 0; i < 2 * StragglerWatch::kWindow; ++i) {
    auto g = collective(1, 2, 5'000);
    g.complete = false;
    watch.add(g);
  }
  EXPECT_FALSE(watch.verdict());
}

}  // namespace
}  // namespace hvdrun::launcher
