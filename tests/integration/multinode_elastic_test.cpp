// Elastic jobs on the sshd test hosts (scripts/test-hosts.sh): the discovery script adds a
// second host, whose workers start over SSH and join at the next commit; then that host's
// network goes down (its veth set down): its workers miss their heartbeats, are dropped, and
// the job finishes on the first host with every sample applied once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/multinode_hosts.h"
#include "tests/ssh/test_hosts.h"

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
  std::this_thread::sleep_for(milliseconds(1500));  // the four train together
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

}  // namespace
}  // namespace hvdrun::itest
