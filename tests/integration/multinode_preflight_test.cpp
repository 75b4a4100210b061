// hvdrun --preflight on the sshd test hosts, each bad host made for real: a program that exists
// on this machine only (under the hosts' private /tmp/hvdt-private), a host whose link is
// shaped by tc to 50 Mbit/s, a host whose sshd is stopped (its agent cannot start). Each is
// named in the table with the check it failed; a static job fails or, with
// --preflight-exclude, runs on the others; an elastic job goes on without the host, and takes
// it in after a cooldown.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/integration/multinode_hosts.h"
#include "tests/remote/test_hosts.h"
#include "tests/support/proc_file.h"
#include "tests/support/wait_until.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;
namespace hosts = launcher::ssh::test;

// Host 2's outgoing traffic limited to 50 Mbit/s for the test's life.
struct SlowLink {
  SlowLink() {
    EXPECT_EQ(std::system("ip netns exec hvdt2 tc qdisc replace dev eth0 root tbf rate 50mbit "
                          "burst 64kb latency 50ms"),
              0);
  }
  ~SlowLink() { std::system("ip netns exec hvdt2 tc qdisc del dev eth0 root 2>/dev/null"); }
};

TEST(TestHostsPreflight, AHostBehindASlowLinkIsNamedAndTheStaticJobDoesNotStart) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  SlowLink slow;
  // Three hosts: the median link is a fast one. A generous slack: the 2 cores that every
  // host shares make the matrix products vary.
  const auto r = run_hvdrun({"-np", "3", "-H", "localhost:1,hvdt-h1:1,hvdt-h2:1", "--preflight",
                             "--preflight-slack", "95", "sh", "-c", "echo ran"},
                            home.env(), seconds(90));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: preflight of 3 hosts in ")) << r.err;
  // hvdt-h2's row names its link, and the error names hvdt-h2: first, or after a host that a
  // loaded machine made fail its matrix product (as an ASan build can).
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(hvdt-h2 .*FAIL: link [0-9.]+ MB/s)")))
      << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(hvdrun: error: preflight: host (hvdt-h2 failed its preflight check )"
                        R"(\(link |.*so did .*hvdt-h2))")))
      << r.err;
  EXPECT_TRUE(contains(r.err, "no worker was started")) << r.err;
  EXPECT_FALSE(contains(r.out, "ran")) << r.out;
}

TEST(TestHostsPreflight, AHostWithoutTheProgramIsLeftOutWithPreflightExclude) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  // /tmp/hvdt-private is this machine's alone: the hosts have an empty one.
  const std::filesystem::path dir = "/tmp/hvdt-private/preflight-test";
  std::filesystem::create_directories(dir);
  const auto program = dir / "say";
  std::ofstream(program) << "#!/bin/sh\necho \"said on $(hostname)\"\n";
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  // -np 1 goes on the first host, hvdt-h1: it fails, and localhost takes the rank.
  const auto r = run_hvdrun({"-np", "1", "-H", "hvdt-h1:1,localhost:1", "--preflight",
                             "--preflight-exclude", "--preflight-slack", "95", program.string()},
                            home.env(), seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      contains(r.err, "FAIL: program: " + program.string() + " is not an executable file here"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: preflight: 1 host left out of the job: hvdt-h1")) << r.err;
  EXPECT_EQ(r.out.find("said on hvdt-h1"), std::string::npos) << r.out;
  EXPECT_TRUE(contains(r.out, "said on ")) << r.out;
  std::filesystem::remove_all(dir);
}

// --preflight-exclude may move the job onto hosts beyond its first -np slots: those are checked
// too. Here no host has the program: both fail, and no job runs on an unchecked one.
TEST(TestHostsPreflight, WithPreflightExcludeEveryHostIsCheckedBeforeItIsUsed) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  const auto r =
      run_hvdrun({"-np", "1", "-H", "hvdt-h1:1,hvdt-h2:1", "--preflight", "--preflight-exclude",
                  "--preflight-slack", "95", "no-such-program-anywhere"},
                 home.env(), seconds(90));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: preflight of 2 hosts in ")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(hvdt-h2 .*FAIL: program)"))) << r.err;
  EXPECT_TRUE(contains(r.err, "the hosts that passed give 0 slots, fewer than -np 1")) << r.err;
}

TEST(TestHostsPreflight, AHostWhoseAgentCannotStartIsUnreachableAndTheElasticJobGoesOn) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  EXPECT_EQ(hosts::run_script("stop 2"), 0);
  const auto r =
      run_hvdrun({"-np", "2", "--min-np", "1", "--max-np", "2", "-H", "hvdt-h1:1,hvdt-h2:1",
                  "--preflight", "--preflight-slack", "95", "sh", "-c", "echo ran on $(hostname)"},
                 home.env(), seconds(90));
  EXPECT_EQ(hosts::run_script("start 2"), 0);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "FAIL: unreachable: connection refused by SSH host hvdt-h2"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: preflight: 1 host starts in cooldown (10 s, "
                       "--blacklist-cooldown-range): hvdt-h2"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "ran on hvdt-h1")) << r.out;
  EXPECT_FALSE(contains(r.out, "ran on hvdt-h2")) << r.out;
}

// Three hosts: hvdt-h1's probe hangs before it joins the others, hvdt-h2's checks crash
// (their process dies of SIGABRT). Each fails with its own cause; this machine, whose probe waited
// for them, passes; and nothing in between speaks of ranks or re-formations.
TEST(TestHostsPreflight, AHangAndACrashFailTheirOwnHostsOnly) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  TempDir dir;
  const auto hvdrun = dir.path / "hvdrun";
  std::filesystem::copy_file(HVDRUN_BINARY, hvdrun);
  std::string probe = probe_whose_checks_crash("[ \"$HVDRUN_HOSTNAME\" = hvdt-h2 ]");
  probe.insert(probe.find('\n') + 1, "[ \"$HVDRUN_HOSTNAME\" = hvdt-h1 ] && exec sleep 612.5\n");
  std::ofstream(dir.path / "hvdrun-preflight") << probe;
  std::filesystem::permissions(dir.path / "hvdrun-preflight", std::filesystem::perms::owner_all);
  const auto r =
      HvdrunProcess(hvdrun.string(),
                    {"-np", "3", "-H", "localhost:1,hvdt-h1:1,hvdt-h2:1", "--preflight-only",
                     "--preflight-timeout", "10", "--preflight-slack", "90", "true"},
                    home.env(), "/dev/null")
          .finish(seconds(90));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(localhost .* ok\n)"))) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(hvdt-h1 .*FAIL: no report from 1 of its 1 probes \(the checks ran)")))
      << r.err;
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex(R"(hvdt-h2 .*FAIL: its checks crashed \(SIGABRT\))")))
      << r.err;
  EXPECT_FALSE(contains(r.err, "rank")) << r.err;
  EXPECT_FALSE(contains(r.err, "re-forming")) << r.err;
}

// True once a preflight probe runs on test host `host`.
bool probe_runs_on(int host) {
  for (const int pid : host_processes(host)) {
    const std::string cmdline =
        hvdrun::test::read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find("hvdrun-preflight") != std::string::npos) return true;
  }
  return false;
}

// A Ctrl-C while the probes run (the slow link keeps them busy for seconds): hvdrun ends
// without a verdict and without starting the job, and no probe is left on any host.
TEST(TestHostsPreflight, ACtrlCDuringTheChecksEndsHvdrunWithNoJobAndNoProbeLeft) {
  REQUIRE_TEST_HOSTS();
  TestHome home;
  SlowLink slow;
  HvdrunProcess hvdrun(
      {"-np", "3", "-H", "localhost:1,hvdt-h1:1,hvdt-h2:1", "--preflight", "sh", "-c", "echo ran"},
      home.env());
  ASSERT_TRUE(
      hvdrun::test::wait_until([] { return probe_runs_on(1) && probe_runs_on(2); }, seconds(30)))
      << "no probe started on both hosts";
  hvdrun.signal(SIGINT);
  const auto r = hvdrun.finish(seconds(30));
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: preflight interrupted: no job was started")) << r.err;
  EXPECT_FALSE(contains(r.err, "preflight of 3 hosts")) << r.err;  // no verdict
  EXPECT_FALSE(contains(r.out, "ran")) << r.out;
  EXPECT_TRUE(wait_hosts_idle({1, 2}, seconds(10)).empty());
}

// An elastic job with a slow host among its hosts (-H, or its discovery script's list): the job
// starts without it, the host cools down as if a worker had failed there, then joins, and the
// job finishes at full size.
void slow_host_joins_after_its_cooldown(bool discovery) {
  TestHome home;
  SlowLink slow;
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:1\nhvdt-h1:1\nhvdt-h2:1\n");
  std::vector<std::string> flags = {"-np",
                                    discovery ? "2" : "3",
                                    "--min-np",
                                    "1",
                                    "--max-np",
                                    "3",
                                    "--blacklist-cooldown-range",
                                    "3",
                                    "3",
                                    "--preflight",
                                    "--preflight-slack",
                                    "95"};
  if (discovery) {
    for (const std::string& f :
         {std::string("--host-discovery-script"), "cat " + (dir.path / "hosts").string(),
          std::string("--discovery-interval"), std::string("0.2")}) {
      flags.push_back(f);
    }
  } else {
    flags.push_back("-H");
    flags.push_back("localhost:1,hvdt-h1:1,hvdt-h2:1");
  }
  HvdrunProcess job(elastic_job(dir, flags, 20), home.env());
  // The three slots' workers: hvdt-h2's started once its cooldown ended.
  EXPECT_EQ(wait_for_pids(dir.path, 3, seconds(60)).size(), 3u);
  const auto r = job.finish(seconds(120));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(hvdt-h2 .*FAIL: link [0-9.]+ MB/s)")))
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(hvdrun: preflight: [0-9] hosts? starts? )"
                                                  R"(in cooldown \(3 s, [^)]*\): .*hvdt-h2)")))
      << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(host hvdt-h2 failed its preflight check \(link [^)]*\): unused )"
                        R"(for 3 s)")))
      << r.err;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 3u) << r.out << r.err;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "all ranks agree")) << r.out;
}

TEST(TestHostsPreflight, AnElasticJobTakesAHostThatFailedOnceItsCooldownEnds) {
  REQUIRE_TEST_HOSTS();
  slow_host_joins_after_its_cooldown(false);
}

TEST(TestHostsPreflight, ADiscoveredHostThatFailedJoinsOnceItsCooldownEnds) {
  REQUIRE_TEST_HOSTS();
  slow_host_joins_after_its_cooldown(true);
}

}  // namespace
}  // namespace hvdrun::itest
