// Elastic jobs on the sshd test hosts (scripts/test-hosts.sh): the discovery script adds a
// second host, whose workers start over SSH and join at the next commit; then that host's
// network goes down (its veth set down): its workers miss their heartbeats, are dropped, and
// the job finishes on the first host with every sample applied once.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/multinode_hosts.h"
#include "tests/remote/test_hosts.h"
#include "tests/support/proc_file.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Sets the bridge side of host `i`'s veth down; up again on destruction.
class LinkDown {
 public:
  explicit LinkDown(int host) : link_("hvdtv" + std::to_string(host)) {
    down_ = std::system(("ip link set " + link_ + " down").c_str()) == 0;
  }
  ~LinkDown() { (void)std::system(("ip link set " + link_ + " up").c_str()); }
  LinkDown(const LinkDown&) = delete;
  LinkDown& operator=(const LinkDown&) = delete;
  bool down() const { return down_; }

 private:
  std::string link_;
  bool down_ = false;
};

void write_hosts(const TempDir& dir, const std::string& text) {
  std::ofstream(dir.path / "hosts.new") << text;
  std::filesystem::rename(dir.path / "hosts.new", dir.path / "hosts");
}

TEST(TestHostsElastic, DiscoveryAddsAHostOverSshAndAHostCutOffIsDropped) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  write_hosts(dir, "hvdt-h1:2\n");
  HvdrunProcess job(
      elastic_job(dir,
                  {"-np", "2", "--max-np", "4", "--host-discovery-script",
                   "cat " + (dir.path / "hosts").string(), "--discovery-interval", "0.2",
                   "--unresponsive-timeout", "2", "--blacklist-cooldown-range", "60", "60"},
                  12),
      home.env());
  wait_for_pids(dir.path, 2, seconds(30));
  write_hosts(dir, "hvdt-h1:2\nhvdt-h2:2\n");
  wait_for_pids(dir.path, 4, seconds(30));
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the four train together";
  const LinkDown cut(2);
  ASSERT_TRUE(cut.down());
  const auto r = job.finish(seconds(110));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "generation 1: 4 workers, 2 of them new")) << r.err;
  EXPECT_TRUE(contains(r.err, "missed its heartbeats")) << r.err;
  EXPECT_TRUE(contains(r.err, "host hvdt-h2 unused for 60 s")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 2u) << r.out << r.err;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 2) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 98304 samples of 98304; all ranks agree")) << r.out;
}

// The pid of host `host`'s node agent (`hvdrun --node-agent`), or -1.
pid_t node_agent_pid(int host) {
  for (const int pid : host_processes(host)) {
    const std::string cmdline =
        hvdrun::test::read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find(std::string("--node-agent\0", 13)) != std::string::npos) return pid;
  }
  return -1;
}

// A host's node agent is SIGKILLed: its workers die with it, the host is lost once (one
// failure, one cooldown, one re-formation, however many workers it ran), and the job finishes
// on the other host with every sample applied once.
TEST(TestHostsElastic, AKilledNodeAgentIsOneLostHost) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  HvdrunProcess job(elastic_job(dir,
                                {"-np", "4", "--min-np", "2", "-H", "hvdt-h1:2,hvdt-h2:2",
                                 "--blacklist-cooldown-range", "60", "600"},
                                12),
                    home.env());
  const auto workers = wait_for_pids(dir.path, 4, seconds(30));
  ASSERT_EQ(workers.size(), 4u);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the four train together";
  const pid_t agent = node_agent_pid(2);
  ASSERT_GT(agent, 0);
  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  const auto r = job.finish(seconds(110));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "the node agent on hvdt-h2")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "(and with it 1 other worker); host hvdt-h2 unused for 60 s; "
                       "re-forming with 2 surviving workers"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "unused for 120 s")) << "the host's cooldown doubled: " << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 2u) << r.out << r.err;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 98304 samples of 98304; all ranks agree")) << r.out;
  EXPECT_TRUE(wait_hosts_idle({2}, seconds(5)).empty());
}

// A host whose node agent was killed gets a new agent (a new SSH session) when its cooldown
// ends: its workers start there again and join, instead of failing at once with the old
// agent's error (one loss and one return: --reset-limit 2 is enough), and the job finishes
// with all four.
TEST(TestHostsElastic, AKilledNodeAgentsHostComesBackWithANewAgent) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir,
                  {"-np", "4", "--min-np", "2", "-H", "hvdt-h1:2,hvdt-h2:2",
                   "--blacklist-cooldown-range", "1", "1", "--reset-limit", "2", "--verbose"},
                  16),
      home.env());
  ASSERT_EQ(wait_for_pids(dir.path, 4, seconds(30)).size(), 4u);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the four train together";
  const pid_t agent = node_agent_pid(2);
  ASSERT_GT(agent, 0);
  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  const auto r = job.finish(seconds(150));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "host hvdt-h2 unused for 1 s")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdt-h2: a new node agent in place of the lost one")) << r.err;
  EXPECT_FALSE(contains(r.err, "unused for 2 s")) << "the host failed again: " << r.err;
  const auto done = finished(r.out);
  EXPECT_EQ(done.size(), 4u) << r.out << r.err;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 4) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

// A static job: a killed node agent fails the job, naming the host, and leaves nothing behind.
TEST(TestHostsElastic, AKilledNodeAgentFailsAStaticJob) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir pids;
  HvdrunProcess hvdrun(
      {"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", TEST_WORKER, "sleep", pids.path.string()},
      home.env());
  const auto workers = wait_for_pids(pids.path, 4, seconds(20));
  ASSERT_EQ(workers.size(), 4u);
  const pid_t agent = node_agent_pid(2);
  ASSERT_GT(agent, 0);
  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  const auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err, "the node agent on hvdt-h2 (10.213.0.12:22) ended")) << r.err;
  EXPECT_TRUE(wait_until_gone(workers, seconds(5)).empty());
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

// --max-restarts with a discovery script: when a host leaves, every worker restarts on the
// hosts left, and torchrun's GROUP_RANK and GROUP_WORLD_SIZE count those hosts only (not
// every host the job has known).
TEST(TestHostsElastic, ARestartWithoutAHostNumbersOnlyTheHostsLeft) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  write_hosts(dir, "hvdt-h1:1\nhvdt-h2:1\n");
  const std::string worker =
      "echo \"size $WORLD_SIZE group $GROUP_RANK of $GROUP_WORLD_SIZE on $(hostname)\";"
      "if [ \"$WORLD_SIZE\" = 2 ]; then echo $$ > " +
      dir.path.string() + "/$RANK.pid; exec sleep 30; fi";
  HvdrunProcess job({"-np", "2", "--min-np", "1", "--max-np", "2", "--max-restarts", "1",
                     "--host-discovery-script", "cat " + (dir.path / "hosts").string(),
                     "--discovery-interval", "0.2", "/bin/sh", "-c", worker},
                    home.env());
  wait_for_pids(dir.path, 2, seconds(30));
  write_hosts(dir, "hvdt-h2:1\n");
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "size 2 group 0 of 2 on hvdt-h1")) << r.out;
  EXPECT_TRUE(contains(r.out, "size 2 group 1 of 2 on hvdt-h2")) << r.out;
  EXPECT_TRUE(contains(r.out, "size 1 group 0 of 1 on hvdt-h2")) << r.out << r.err;
}

// --exclude-stragglers on an elastic job of 3 ranks, 2 on hvdt-h1 and 1 on hvdt-h2, whose
// worker pauses 60 ms per step against 15 ms on hvdt-h1, so it comes last to nearly every
// allreduce, 45 ms late; `flags` are added. Its result, once the straggler was named.
RunResult straggler_job(const std::vector<std::string>& flags) {
  TestHome home;
  TempDir dir;
  std::vector<std::string> all = {"-np",
                                  "3",
                                  "--min-np",
                                  "2",
                                  "-H",
                                  "hvdt-h1:2,hvdt-h2:1",
                                  "--exclude-stragglers",
                                  "--straggler-margin",
                                  "20"};
  all.insert(all.end(), flags.begin(), flags.end());
  HvdrunProcess job(
      elastic_job(dir, all, 8,
                  "[ \"$HVDRUN_HOSTNAME\" = hvdt-h2 ] && set -- \"$@\" --step-delay-ms 60; "),
      home.env());
  auto r = job.finish(seconds(110));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: straggler: rank 2 (host hvdt-h2) arrived last in "))
      << r.err;
  return r;
}

// The straggler's host cools down, the two on hvdt-h1 re-form and finish with every sample
// applied once.
TEST(TestHostsElastic, APersistentStragglersHostIsExcluded) {
  REQUIRE_TEST_HOSTS();
  const auto r = straggler_job({"--blacklist-cooldown-range", "300", "300"});
  EXPECT_TRUE(contains(r.err,
                       "(--exclude-stragglers, margin 20 ms); host hvdt-h2 unused for 300 s; "
                       "re-forming with 2 workers (1 worker stopped there)"))
      << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 2u) << r.out << r.err;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 2) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 65536 samples of 65536; all ranks agree")) << r.out;
}

// The same straggler with --reset-limit 0: its exclusion would be a re-formation, and none is
// left, so its host stays (said once) and the job finishes on all three ranks.
TEST(TestHostsElastic, AStragglerStaysOnceTheResetLimitIsUsed) {
  REQUIRE_TEST_HOSTS();
  const auto r = straggler_job({"--reset-limit", "0"});
  EXPECT_TRUE(contains(r.err, "; host hvdt-h2 stays: no re-formation left: --reset-limit 0 used"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "re-forming with")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 3u) << r.out << r.err;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "all ranks agree")) << r.out;
}

// A warm spare on a remote host, started through its node agent: a worker killed on the other
// host is replaced by it at once, and the job ends at full size with one hash.
TEST(TestHostsElastic, ARemoteSpareTakesAKilledWorkersPlace) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir,
                  {"-np", "3", "--min-np", "3", "--max-np", "3", "--spares", "1", "-H",
                   "hvdt-h1:2,hvdt-h2:2", "--blacklist-cooldown-range", "60", "60", "--verbose"},
                  8),
      home.env());
  const auto pids = wait_for_pids(dir.path, 4, seconds(30));
  ASSERT_EQ(pids.size(), 4u);
  pid_t spare = -1, victim = -1;
  std::ifstream(dir.path / "3.pid") >> spare;   // key 3: the spare, on hvdt-h2's free slot
  std::ifstream(dir.path / "0.pid") >> victim;  // rank 0, on hvdt-h1
  ASSERT_TRUE(job.wait_for_output("hvdrun: spare 3 (host hvdt-h2) waits", 1));
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(110));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "generation 1: 3 workers, 1 of them new (1 a warm spare)")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 3u) << r.out << r.err;
  EXPECT_TRUE(done.contains(spare)) << spare << "\n" << r.out;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 3) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.err, "hvdrun: spares: 1 started, 1 promoted (spare 3 (host hvdt-h2, "))
      << r.err;
}

// A lost host takes its spare with it: hvdt-h2 runs rank 2 and the spare; its node agent is
// killed, and the survivors re-form without promoting the spare that was lost.
TEST(TestHostsElastic, ALostHostsSpareIsNotPromoted) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  HvdrunProcess job(
      elastic_job(dir,
                  {"-np", "3", "--min-np", "2", "--max-np", "3", "--spares", "1", "-H",
                   "hvdt-h1:2,hvdt-h2:2", "--blacklist-cooldown-range", "60", "60", "--verbose"},
                  8),
      home.env());
  const auto pids = wait_for_pids(dir.path, 4, seconds(30));
  ASSERT_EQ(pids.size(), 4u);
  pid_t spare = -1;
  std::ifstream(dir.path / "3.pid") >> spare;  // key 3: the spare, on hvdt-h2's free slot
  ASSERT_TRUE(job.wait_for_output("hvdrun: spare 3 (host hvdt-h2) waits", 1));
  const pid_t agent = node_agent_pid(2);
  ASSERT_GT(agent, 0);
  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  const auto r = job.finish(seconds(110));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "host hvdt-h2 unused for 60 s; re-forming with 2 surviving workers"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "a warm spare")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: spares: 1 started, 0 promoted")) << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 2u) << r.out << r.err;
  EXPECT_FALSE(done.contains(spare)) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(wait_hosts_idle({2}, seconds(5)).empty());
}

}  // namespace
}  // namespace hvdrun::itest
