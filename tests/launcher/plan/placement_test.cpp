// place(): horovodrun's fill-in-order rule with exactly num_proc ranks, and its invariants on
// generated host lists.
#include "launcher/plan/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "hvdrun/error.h"

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;

std::vector<HostSpec> hosts_of(std::initializer_list<std::pair<const char*, int>> list) {
  std::vector<HostSpec> hosts;
  for (const auto& [name, slots] : list) hosts.push_back(HostSpec{"", name, slots, "-H"});
  return hosts;
}

// (host, rank, local_rank, local_size, cross_rank, cross_size)
using Row = std::tuple<std::string, int, int, int, int, int>;
std::vector<Row> rows(const std::vector<Slot>& slots) {
  std::vector<Row> out;
  for (const auto& s : slots) {
    out.emplace_back(s.host, s.rank, s.local_rank, s.local_size, s.cross_rank, s.cross_size);
  }
  return out;
}

TEST(Placement, Homogeneous) {
  const auto slots = place(hosts_of({{"a", 2}, {"b", 2}}), 4);
  EXPECT_THAT(rows(slots), ElementsAre(Row{"a", 0, 0, 2, 0, 2}, Row{"a", 1, 1, 2, 0, 2},
                                       Row{"b", 2, 0, 2, 1, 2}, Row{"b", 3, 1, 2, 1, 2}));
  EXPECT_EQ(slots[2].host_index, 1u);
  EXPECT_EQ(slots[1].host_index, 0u);
  EXPECT_EQ(slots[2].node_rank, 1);
  EXPECT_EQ(slots[1].node_rank, 0);
  for (const auto& s : slots) EXPECT_EQ(s.node_count, 2);
}

TEST(Placement, HeterogeneousAsHorovodrun) {
  // Reference example w0:1,w1:2.
  EXPECT_THAT(
      rows(place(hosts_of({{"w0", 1}, {"w1", 2}}), 3)),
      ElementsAre(Row{"w0", 0, 0, 1, 0, 2}, Row{"w1", 1, 0, 2, 1, 2}, Row{"w1", 2, 1, 2, 0, 1}));
}

TEST(Placement, FewerProcessesThanSlots) {
  const auto hosts = hosts_of({{"a", 2}, {"b", 2}, {"c", 4}});
  EXPECT_THAT(rows(place(hosts, 3)), ElementsAre(Row{"a", 0, 0, 2, 0, 2}, Row{"a", 1, 1, 2, 0, 1},
                                                 Row{"b", 2, 0, 1, 1, 2}));
  EXPECT_THAT(rows(place(hosts, 2)), ElementsAre(Row{"a", 0, 0, 2, 0, 1}, Row{"a", 1, 1, 2, 0, 1}));
  EXPECT_THAT(rows(place(hosts, 1)), ElementsAre(Row{"a", 0, 0, 1, 0, 1}));
}

TEST(Placement, TooFewSlots) {
  try {
    place(hosts_of({{"a", 2}, {"b", 2}}), 8);
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "-np 8 but the hosts give only 4 slots (a:2, b:2)");
  }
  EXPECT_THROW(place(hosts_of({{"a", 1}}), 0), UsageError);
  EXPECT_THROW(place({}, 1), UsageError);
}

TEST(Placement, LongHostListsAreSummarised) {
  std::vector<HostSpec> hosts;
  for (int i = 0; i < 10; ++i) hosts.push_back(HostSpec{"", "h" + std::to_string(i), 1, "-H"});
  try {
    check_enough_slots(hosts, 11);
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "-np 11 but the hosts give only 10 slots (h0:1, h1:1, h2:1, h3:1, h4:1, h5:1, "
                 "and 4 more)");
  }
}

// Invariants on random host lists: ranks 0..n-1 in host order; each host's local ranks are
// 0..local_size-1; for each local rank, the hosts having it are numbered 0..cross_size-1.
TEST(Placement, InvariantsOnGeneratedHostLists) {
  std::mt19937 random(12345);
  for (int round = 0; round < 200; ++round) {
    std::vector<HostSpec> hosts;
    int total = 0;
    const int count = 1 + static_cast<int>(random() % 6);
    for (int h = 0; h < count; ++h) {
      const int slots = 1 + static_cast<int>(random() % 5);
      hosts.push_back(HostSpec{"", "h" + std::to_string(h), slots, "-H"});
      total += slots;
    }
    const int np = 1 + static_cast<int>(random() % static_cast<unsigned>(total));
    const auto slots = place(hosts, np);
    ASSERT_EQ(slots.size(), static_cast<std::size_t>(np));
    std::map<int, std::vector<std::size_t>> hosts_at_local_rank;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const auto& s = slots[i];
      EXPECT_EQ(s.rank, static_cast<int>(i));
      EXPECT_EQ(s.host, hosts[s.host_index].name);
      EXPECT_LE(s.local_size, hosts[s.host_index].slots);
      if (i > 0) {
        EXPECT_GE(s.host_index, slots[i - 1].host_index);
      }
      const bool first_on_host = i == 0 || slots[i - 1].host_index != s.host_index;
      EXPECT_EQ(s.local_rank, first_on_host ? 0 : slots[i - 1].local_rank + 1);
      const int node_rank = i == 0 ? 0 : slots[i - 1].node_rank + (first_on_host ? 1 : 0);
      EXPECT_EQ(s.node_rank, node_rank);
      EXPECT_EQ(s.node_count, slots.back().node_rank + 1);
      auto& seen = hosts_at_local_rank[s.local_rank];
      EXPECT_EQ(s.cross_rank, static_cast<int>(seen.size()));
      seen.push_back(s.host_index);
    }
    for (const auto& s : slots) {
      EXPECT_EQ(s.cross_size, static_cast<int>(hosts_at_local_rank[s.local_rank].size()));
      int on_host = 0;
      for (const auto& t : slots) on_host += t.host_index == s.host_index ? 1 : 0;
      EXPECT_EQ(s.local_size, on_host);
    }
  }
}

}  // namespace
}  // namespace hvdrun::launcher
