// The worker table: look-ups by WorkerId, key and Horovod name, counts derived from the
// records, the rank-0 worker; and the generation log's summary.
#include "launcher/job/worker_table.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "hvdrun/error.h"
#include "launcher/job/generation_log.h"

namespace hvdrun::launcher {
namespace {

Slot slot(int rank, int local_rank, std::size_t host, const std::string& name) {
  Slot s;
  s.rank = rank;
  s.local_rank = local_rank;
  s.host_index = host;
  s.host = name;
  return s;
}

TEST(WorkerTable, FindsAWorkerByIdAndByKey) {
  WorkerTable table;
  table.add({0, 0, 0}, WorkerKey{0}, slot(0, 0, 0, "a"));
  table.add({1, 0, 0}, WorkerKey{7}, slot(1, 0, 1, "b"));
  ASSERT_NE(table.find(WorkerId{1, 0, 0}), nullptr);
  EXPECT_EQ(table.find(WorkerId{1, 0, 0})->key, WorkerKey{7});
  EXPECT_EQ(table.find(WorkerKey{7})->id, (WorkerId{1, 0, 0}));
  EXPECT_EQ(table.find(WorkerKey{1}), nullptr);
  EXPECT_EQ(table.find(WorkerId{1, 0, 1}), nullptr);
  table.erase({1, 0, 0});
  EXPECT_EQ(table.find(WorkerKey{7}), nullptr);
  EXPECT_EQ(table.size(), 1u);
}

TEST(WorkerTable, RefusesASecondWorkerWithTheSameIdOrKey) {
  WorkerTable table;
  table.add({0, 0, 0}, WorkerKey{0}, slot(0, 0, 0, "a"));
  EXPECT_THROW(table.add({0, 0, 0}, WorkerKey{1}, slot(1, 0, 0, "a")), Error);
  EXPECT_THROW(table.add({0, 1, 0}, WorkerKey{0}, slot(1, 1, 0, "a")), Error);
  EXPECT_EQ(table.size(), 1u);
}

TEST(WorkerTable, CountsComeFromTheRecords) {
  WorkerTable table;
  for (int i = 0; i < 4; ++i) table.add({0, i, 0}, WorkerKey{std::uint32_t(i)}, slot(i, i, 0, "a"));
  EXPECT_EQ(table.running(), 4u);
  EXPECT_FALSE(table.any_finished());
  table.set_end(*table.find(WorkerId{0, 1, 0}), ProcessEnd::exited(3));
  table.set_end(*table.find(WorkerId{0, 1, 0}), ProcessEnd::exited(0));  // ignored: ended
  EXPECT_EQ(table.find(WorkerId{0, 1, 0})->end()->value, 3);
  EXPECT_EQ(table.ended(), 1u);
  EXPECT_EQ(table.running(), 3u);
  EXPECT_FALSE(table.any_finished());
  table.set_end(*table.find(WorkerId{0, 2, 0}), ProcessEnd::exited(0));
  EXPECT_TRUE(table.any_finished());
  table.erase({0, 2, 0});  // an ended worker leaves: the counts follow
  EXPECT_FALSE(table.any_finished());
  EXPECT_EQ(table.ended(), 1u);
  EXPECT_EQ(table.running(), 2u);
  table.erase({0, 0, 0});  // a running one
  EXPECT_EQ(table.running(), 1u);
  table.clear();
  EXPECT_EQ(table.ended(), 0u);
  EXPECT_TRUE(table.empty());
}

TEST(WorkerTable, RankZeroFollowsTheSlots) {
  WorkerTable table;
  auto& a = table.add({0, 0, 0}, WorkerKey{0}, slot(0, 0, 0, "a"));
  auto& b = table.add({1, 0, 0}, WorkerKey{1}, slot(1, 0, 1, "b"));
  EXPECT_EQ(table.rank_zero(), &a);
  table.set_slot(a, slot(1, 0, 0, "a"));
  table.set_slot(b, slot(0, 0, 1, "b"));
  EXPECT_EQ(table.rank_zero(), &b);
  table.set_end(b, ProcessEnd::signaled(SIGKILL));
  EXPECT_EQ(table.rank_zero(), &b);
  EXPECT_EQ(table.rank_zero(true), nullptr);  // no running rank 0
  table.erase({1, 0, 0});
  EXPECT_EQ(table.rank_zero(), nullptr);
}

TEST(WorkerTable, FindsTheUnregisteredRunningWorkerOfAHorovodName) {
  WorkerTable table;
  auto& first = table.add({0, 0, 0}, WorkerKey{0}, slot(0, 0, 0, "a"));
  auto& other = table.add({0, 1, 0}, WorkerKey{1}, slot(1, 1, 0, "a"));
  EXPECT_EQ(table.unregistered("a:0"), nullptr);  // not started yet: no name
  table.name_for_horovod(first);
  table.name_for_horovod(other);
  EXPECT_EQ(first.horovod_name(), "a:0");
  EXPECT_EQ(table.unregistered("a:0"), &first);
  EXPECT_EQ(table.unregistered("a:1"), &other);
  // A replacement started under the same name while the first still runs.
  auto& second = table.add({0, 0, 1}, WorkerKey{2}, slot(0, 0, 0, "a"));
  table.name_for_horovod(second);
  EXPECT_EQ(table.unregistered("a:0"), &first);  // the one started first
  first.horovod_registered = true;
  EXPECT_EQ(table.unregistered("a:0"), &second);
  table.set_end(second, ProcessEnd::exited(1));
  EXPECT_EQ(table.unregistered("a:0"), nullptr);
  table.erase({0, 0, 1});
  table.erase({0, 0, 0});
  EXPECT_EQ(table.unregistered("a:0"), nullptr);
  EXPECT_EQ(table.unregistered("a:1"), &other);
}

TEST(WorkerTable, SaysWhoAWorkerIs) {
  WorkerTable table;
  auto& w = table.add({0, 0, 0}, WorkerKey{0}, slot(2, 0, 0, "h1"));
  EXPECT_EQ(w.who(), "rank 2 (host h1)");
  ProcessEnd end = ProcessEnd::exited(1);
  end.pid = 4242;
  table.set_end(w, end);
  EXPECT_EQ(w.who(), "rank 2 (host h1, pid 4242)");
}

TEST(GenerationLog, DescribesEveryGenerationOnceThereAreTwo) {
  using Clock = GenerationLog::Clock;
  const Clock::time_point t0{};
  GenerationLog log(t0, 4);
  EXPECT_EQ(log.describe(), "");
  log.formed(t0 + std::chrono::milliseconds(500));
  log.formed(t0 + std::chrono::milliseconds(900));  // the first time counts
  log.end(t0 + std::chrono::seconds(2), "rank 1 (host a) exited with code 3");
  log.end(t0 + std::chrono::seconds(3), "later");  // already ended
  log.begin(t0 + std::chrono::seconds(2), 3);
  log.end_reason_if_none("interrupted (SIGINT)");
  log.end_reason_if_none("ignored");
  EXPECT_EQ(log.count(), 2u);
  EXPECT_EQ(log.number(), 1u);
  EXPECT_EQ(log.describe(),
            "generations:\n"
            "    0: 4 ranks, started 0.00 s, formed 0.50 s, ended 2.00 s: rank 1 (host a) exited "
            "with code 3\n"
            "    1: 3 ranks, started 2.00 s: interrupted (SIGINT)");
}

TEST(WorkerTable, CountsTheRunningNewcomersUntilTheirGenerationForms) {
  WorkerTable table;
  table.add({0, 0, 0}, WorkerKey{0}, Slot{});
  auto& a = table.add({0, 1, 0}, WorkerKey{1}, Slot{});
  auto& b = table.add({0, 2, 0}, WorkerKey{2}, Slot{});
  table.set_newcomer(a);
  table.set_newcomer(a);  // once
  table.set_newcomer(b);
  EXPECT_TRUE(a.newcomer());
  EXPECT_EQ(table.running_newcomers(), 2u);
  table.set_end(b, ProcessEnd::exited(1));
  EXPECT_EQ(table.running_newcomers(), 1u);
  table.erase({0, 2, 0});
  EXPECT_EQ(table.running_newcomers(), 1u);
  table.erase({0, 1, 0});
  EXPECT_EQ(table.running_newcomers(), 0u);
  auto& c = table.add({0, 1, 1}, WorkerKey{3}, Slot{});
  table.set_newcomer(c);
  table.clear_newcomers();
  EXPECT_FALSE(c.newcomer());
  EXPECT_EQ(table.running_newcomers(), 0u);
  EXPECT_EQ(table.running(), 2u);
}

TEST(WorkerTable, ARunningRankZeroWhoseSlotWasRemovedIsNotTheJobsRankZero) {
  WorkerTable table;
  auto& old_zero = table.add({1, 0, 0}, WorkerKey{0}, Slot{});  // rank 0 before a re-formation
  auto& new_zero = table.add({0, 0, 0}, WorkerKey{1}, Slot{});
  old_zero.removed = true;
  EXPECT_EQ(table.rank_zero(true), &new_zero);
}

}  // namespace
}  // namespace hvdrun::launcher
