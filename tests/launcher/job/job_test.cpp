// The job core driven through fake worker pools (fake_pools.h): a job starts its workers, they
// end (or fail), the job restarts them or re-forms its survivors, and it finishes with the
// status its workers' ends give. What the job tells its components is recorded.
#include "launcher/job/job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/members/make_membership.h"
#include "launcher/output/console.h"
#include "launcher/plan/placement.h"
#include "rendezvous/auth.h"
#include "tests/launcher/job/fake_pools.h"

namespace hvdrun::launcher {
namespace {

// Records the job's events as lines; the hooks let a test act at those moments.
class Recorder final : public JobEvents {
 public:
  Recorder(std::vector<std::string>& lines, std::function<void()>& workers_started,
           std::function<void(std::size_t)>& generation_ended)
      : lines_(lines),
        on_workers_started_(workers_started),
        on_generation_ended_(generation_ended) {}

  void workers_started(const std::vector<WorkerEvent>& started) override {
    for (const auto& w : started) lines_.push_back("started " + describe(w));
    if (on_workers_started_) on_workers_started_();
  }
  void worker_ended(const WorkerEvent& ended) override {
    lines_.push_back("ended " + describe(ended) + ": " + ended.record.end()->what_happened());
  }
  void generation_ended(std::size_t number, const GenerationLog::Generation& g) override {
    lines_.push_back("generation " + std::to_string(number) + " ended: " + g.end_reason);
    if (on_generation_ended_) on_generation_ended_(number);
  }
  void job_ended() override { lines_.push_back("job ended"); }

 private:
  static std::string describe(const WorkerEvent& w) {
    return "rank " + std::to_string(w.record.slot().rank) + " on " + w.host + " (incarnation " +
           std::to_string(w.record.id.incarnation) + ")";
  }
  std::vector<std::string>& lines_;
  std::function<void()>& on_workers_started_;
  std::function<void(std::size_t)>& on_generation_ended_;
};

JobSpec spec_of(std::vector<HostSpec> hosts, int np) {
  JobSpec spec;
  spec.hosts = std::move(hosts);
  spec.num_proc = np;
  spec.command = {"train"};
  return spec;
}

// One job on fake pools, its events recorded.
class JobHarness {
 public:
  explicit JobHarness(JobSpec spec) : spec_(std::move(spec)), plan_(plan_as_asked(spec_)) {
    std::vector<Slot> slots = place(spec_.hosts, spec_.num_proc);
    first_slots_ = slots;
    rdzv::ServerOptions server;
    server.secret = rdzv::make_secret();
    server.slots = slots;
    JobComponents components;
    components.push_back(std::make_unique<Recorder>(events, workers_started, generation_ended));
    JobStart start{spec_,
                   plan_,
                   std::move(slots),
                   {},
                   {"127.0.0.1", "127.0.0.1"},
                   std::move(server),
                   {},
                   "job-test",
                   local_hosts_,
                   std::move(components),
                   {},
                   {}};
    start.pools = [this](PoolEvents& pool_events) {
      auto fake = std::make_unique<test::FakePools>(io_, pool_events, spec_.hosts);
      pools = fake.get();
      return fake;
    };
    start.membership = [this](const JobParts& parts) {
      return make_membership(io_, parts, first_slots_, watchdog_, local_hosts_);
    };
    job_ = std::make_unique<Job>(io_, std::move(start), watchdog_, sink_, environment_);
  }

  // Launches the job and runs it to its end; false if it did not end (a hang guard: the job
  // under test waits for nothing of the machine's).
  bool run() {
    job_->launch();
    io_.run_for(std::chrono::seconds(60));
    return io_.stopped();
  }
  Job& job() { return *job_; }
  std::size_t count(const std::string& prefix) const {
    return std::count_if(events.begin(), events.end(),
                         [&](const std::string& line) { return line.starts_with(prefix); });
  }
  std::string all_events() const {
    std::string out;
    for (const auto& line : events) out += line + "\n";
    return out;
  }

  std::vector<std::string> events;
  std::function<void()> workers_started;
  std::function<void(std::size_t)> generation_ended;
  test::FakePools* pools = nullptr;

 private:
  JobSpec spec_;
  RunPlan plan_;
  boost::asio::io_context io_{1};
  Console console_{io_};
  OutputSink sink_{OutputOptions{}, console_};
  std::vector<Slot> first_slots_;  // the first generation's
  Watchdog watchdog_;
  LocalHosts local_hosts_;
  std::map<std::string, std::string> environment_;
  std::unique_ptr<Job> job_;
};

TEST(Job, AStaticJobWhoseRanksExitZeroFinishesWithStatusZero) {
  JobHarness h(spec_of({{"", "localhost", 2, "-H"}}, 2));
  h.pools->on_start = [&](const WorkerLaunch& w) { h.pools->end(w.id, ProcessEnd::exited(0)); };
  ASSERT_TRUE(h.run()) << h.all_events();
  EXPECT_EQ(h.job().exit_status(), 0);
  EXPECT_EQ(h.count("started "), 2u) << h.all_events();
  EXPECT_EQ(h.count("ended "), 2u) << h.all_events();
  EXPECT_EQ(h.events.back(), "job ended");
  EXPECT_TRUE(h.pools->closed);
  EXPECT_TRUE(h.pools->signals.empty() ||
              std::all_of(h.pools->signals.begin(), h.pools->signals.end(), [](const auto& s) {
                return s.second == SIGKILL || s.second == SIGTERM;
              }));
}

TEST(Job, AFailedRankEndsTheJobWithItsStatusAndTheOthersGetSigterm) {
  JobHarness h(spec_of({{"", "localhost", 2, "-H"}}, 2));
  h.pools->on_start = [&](const WorkerLaunch& w) {
    if (w.slot.rank == 1) h.pools->end(w.id, ProcessEnd::exited(3));
  };
  ASSERT_TRUE(h.run()) << h.all_events();
  EXPECT_EQ(h.job().exit_status(), 3);
  const WorkerId rank0 = h.pools->started.at(0).id;
  EXPECT_NE(std::find(h.pools->signals.begin(), h.pools->signals.end(),
                      std::pair<WorkerId, int>{rank0, SIGTERM}),
            h.pools->signals.end());
  EXPECT_EQ(h.count("generation 0 ended: rank 1"), 1u) << h.all_events();
  EXPECT_EQ(h.count("started "), 2u) << "no restart without --max-restarts";
}

TEST(Job, ARestartStartsEverySlotAgainAsANewIncarnation) {
  JobSpec spec = spec_of({{"", "localhost", 2, "-H"}}, 2);
  spec.max_restarts = 1;
  JobHarness h(std::move(spec));
  h.pools->on_start = [&](const WorkerLaunch& w) {
    if (w.id.incarnation == 1) return h.pools->end(w.id, ProcessEnd::exited(0));
    if (w.slot.rank == 1) h.pools->end(w.id, ProcessEnd::exited(1));
  };
  ASSERT_TRUE(h.run()) << h.all_events();
  EXPECT_EQ(h.job().exit_status(), 0) << h.all_events();
  ASSERT_EQ(h.pools->started.size(), 4u) << h.all_events();
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(h.pools->started[i].id.incarnation, 1);
    EXPECT_EQ(h.pools->started[i].slot.rank, h.pools->started[i - 2].slot.rank);
  }
  EXPECT_EQ(h.count("generation "), 2u) << h.all_events();
}

TEST(Job, AnElasticJobReFormsItsSurvivorWithoutTheFailedRanksHost) {
  JobSpec spec = spec_of({{"", "a", 1, "-H"}, {"", "b", 1, "-H"}}, 2);
  spec.elastic.min_np = 1;
  spec.elastic.max_np = 2;
  spec.elastic.cooldown_min = spec.elastic.cooldown_max = std::chrono::seconds(600);
  JobHarness h(std::move(spec));
  h.pools->on_start = [&](const WorkerLaunch& w) {
    if (w.slot.rank == 1) h.pools->end(w.id, ProcessEnd::exited(1));
  };
  h.generation_ended = [&](std::size_t number) {  // the survivor finishes in generation 1
    if (number == 0) h.pools->end(h.pools->started.at(0).id, ProcessEnd::exited(0));
  };
  ASSERT_TRUE(h.run()) << h.all_events();
  EXPECT_EQ(h.job().exit_status(), 0) << h.all_events();
  EXPECT_EQ(h.count("generation 0 ended: rank 1"), 1u) << h.all_events();
  EXPECT_EQ(h.count("generation 1 ended"), 1u) << h.all_events();
  EXPECT_EQ(h.pools->started.size(), 2u) << "host b cools down: no replacement";
  EXPECT_TRUE(h.pools->signals.empty()) << "the survivor was not stopped";
}

TEST(Job, AWarmSpareTakesTheFailedWorkersPlaceWithoutANewStart) {
  JobSpec spec = spec_of({{"", "a", 2, "-H"}, {"", "b", 1, "-H"}}, 2);
  spec.elastic.min_np = 1;
  spec.elastic.max_np = 2;
  spec.elastic.spares = 1;
  spec.elastic.cooldown_min = spec.elastic.cooldown_max = std::chrono::seconds(600);
  JobHarness h(std::move(spec));
  h.pools->on_start = [&](const WorkerLaunch& w) {
    if (w.slot.rank == 1) h.pools->end(w.id, ProcessEnd::exited(1));
  };
  h.generation_ended = [&](std::size_t number) {  // generation 1 trains, then finishes
    if (number != 0) return;
    for (const auto& w : h.pools->started) h.pools->end(w.id, ProcessEnd::exited(0));
  };
  ASSERT_TRUE(h.run()) << h.all_events();
  EXPECT_EQ(h.job().exit_status(), 0) << h.all_events();
  ASSERT_EQ(h.pools->started.size(), 3u) << "two workers and the spare; none after";
  const WorkerLaunch& spare = h.pools->started[2];
  EXPECT_EQ(spare.id.host, 1u);
  EXPECT_NE(std::find(spare.env.begin(), spare.env.end(), "HVDRUN_SPARE=1"), spare.env.end());
  EXPECT_EQ(h.count("generation 1 ended"), 1u) << h.all_events();
}

TEST(Job, ASigtermToHvdrunStopsEveryRankAndTheJobEndsWith143) {
  JobHarness h(spec_of({{"", "localhost", 2, "-H"}}, 2));
  h.workers_started = [] { ::raise(SIGTERM); };  // to hvdrun, once the workers run
  ASSERT_TRUE(h.run()) << h.all_events();
  EXPECT_EQ(h.job().exit_status(), 128 + SIGTERM);
  ASSERT_TRUE(h.job().interrupted_at());
  ASSERT_EQ(h.pools->started.size(), 2u);
  for (const auto& w : h.pools->started) {
    EXPECT_NE(std::find(h.pools->signals.begin(), h.pools->signals.end(),
                        std::pair<WorkerId, int>{w.id, SIGTERM}),
              h.pools->signals.end());
  }
  EXPECT_EQ(h.count("generation 0 ended: interrupted (SIGTERM)"), 1u) << h.all_events();
}

}  // namespace
}  // namespace hvdrun::launcher
