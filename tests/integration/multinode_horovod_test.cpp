// Real Horovod across the sshd test hosts: 2 hosts x 2 ranks train to identical parameters;
// each host's workers use their own host's interface for Gloo (eth0 in a test host), not the
// launcher's. An elastic Horovod job re-forms with a new worker on another host, and grows onto
// a discovered host through its rank 0's notification service.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "tests/compat/compat_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/multinode_hosts.h"
#include "tests/remote/test_hosts.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

TEST(TestHostsHorovod, TwoHostsTrainWithHorovod) {
  REQUIRE_TEST_HOSTS();
  REQUIRE_HOROVOD();
  TestHome home;
  auto env = home.env();
  env.merge(horovod_env());
  const auto r = run_hvdrun({"-np", "4", "-H", "hvdt-h1:2,hvdt-h2:2", kPython,
                             job_script("horovod_job.py"), "--steps", "10"},
                            env, seconds(120));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::set<std::string> digests;
  for (int rank = 0; rank < 4; ++rank) {
    const auto topology = rank_lines(r.out, rank, "topology ");
    ASSERT_EQ(topology.size(), 1u) << r.out;
    EXPECT_EQ(field(topology[0], "host"), rank < 2 ? "hvdt-h1" : "hvdt-h2") << topology[0];
    EXPECT_EQ(field(topology[0], "iface"), "eth0") << topology[0];
    // Horovod's local_<host> and cross_<local_rank> scopes have two members each.
    EXPECT_EQ(field(topology[0], "local_rank"), std::to_string(rank % 2)) << topology[0];
    EXPECT_EQ(field(topology[0], "local_size"), "2") << topology[0];
    EXPECT_EQ(field(topology[0], "cross_rank"), std::to_string(rank / 2)) << topology[0];
    EXPECT_EQ(field(topology[0], "cross_size"), "2") << topology[0];
    const auto train = rank_lines(r.out, rank, "train ");
    ASSERT_EQ(train.size(), 1u) << r.out;
    EXPECT_EQ(field(train[0], "in_sync"), "True");
    digests.insert(field(train[0], "params"));
  }
  EXPECT_EQ(digests.size(), 1u);
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

// Elastic Horovod over two hosts: rank 1 on hvdt-h1 dies; h1 cools down, and the next
// generation is the two survivors plus a new worker on h2's free slot, which takes its ranks
// from its environment and the state from rank 0's broadcast. All three finish with equal
// weights.
TEST(TestHostsHorovod, AnElasticJobReFormsWithANewWorkerOnAFreeSlot) {
  REQUIRE_TEST_HOSTS();
  REQUIRE_HOROVOD();
  TestHome home;
  auto env = home.env();
  env.merge(horovod_env());
  // A survivor whose Gloo peers live notices the death by its first generation's Gloo timeout
  // (40 batches: the script's default).
  const auto r =
      run_hvdrun({"-np", "3", "--min-np", "2", "--max-np", "3", "--blacklist-cooldown-range", "60",
                  "60", "-H", "hvdt-h1:2,hvdt-h2:2", kPython, job_script("horovod_elastic_job.py"),
                  "--fail-slot", "1", "--fail-at", "10", "--first-gloo-timeout", "5"},
                 env, seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "host hvdt-h1 unused for 60 s; re-forming with 2 surviving workers"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "generation 1: 3 workers, 1 of them new")) << r.err;
  // The survivors (ranks 0 and 1) re-formed once; the newcomer (last) never did.
  expect_elastic_done(r.out, 40, {1, 1, 0});
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

// Elastic Horovod grows onto a discovered host: rank 0 runs on hvdt-h1, so the host update
// goes to its notification service there (its eth0 address), and the newcomer starts on hvdt-h2
// once both workers asked for their places.
TEST(TestHostsHorovod, ADiscoveredHostIsTakenInThroughRankZerosNotificationService) {
  REQUIRE_TEST_HOSTS();
  REQUIRE_HOROVOD();
  TestHome home;
  TempDir dir;
  auto env = home.env();
  env.merge(horovod_env());
  const auto hosts = (dir.path / "hosts").string();
  std::ofstream(hosts) << "hvdt-h1:2\n";
  const auto r = run_hvdrun(
      {"-np", "2", "--max-np", "3", "--host-discovery-script", "cat " + hosts,
       "--discovery-interval", "0.2", kPython, job_script("horovod_elastic_job.py"), "--batches",
       "40", "--hosts-file", hosts, "--hosts-text", "hvdt-h1:2\nhvdt-h2:1", "--hosts-at", "12"},
      env, seconds(150));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "told the Horovod workers that slots were added")) << r.err;
  EXPECT_TRUE(contains(r.err, "generation 1: 3 workers, 1 of them new")) << r.err;
  expect_elastic_done(r.out, 40, {1, 1, 0});
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(5)).empty());
}

}  // namespace
}  // namespace hvdrun::itest
