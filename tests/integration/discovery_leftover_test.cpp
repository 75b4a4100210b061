// Integration: a discovery script that leaves a process behind in another session, holding
// its stdout open (`setsid ... &`). Its output is taken once it exited (0.5 s for the pipes to
// close): the launch does not wait for the leftover, and later runs go on, so the job grows.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

TEST(DiscoveryLeftover, AScriptsLeftoverHoldingItsOutputStopsNeitherTheLaunchNorLaterRuns) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n");
  // Before the fix the first run never ended (the leftover held stdout past the script's end
  // and its --discovery-timeout kill, which does not reach another session).
  const auto script = hosts_script(dir, "setsid sleep 4 & ");
  write_file(dir.path / "later", "localhost:3\n");
  const std::string worker = "echo \"slot $HVDRUN_SLOT started\"; [ \"$HVDRUN_SLOT\" = 0 ] && " +
                             switch_hosts_command(dir, "later") + "; sleep 3";
  const auto r = run_hvdrun(
      {"-np", "2", "--min-np", "1", "--max-np", "3", "--host-discovery-script", script,
       "--discovery-interval", "0.2", "--discovery-timeout", "2", "/bin/sh", "-c", worker},
      {}, seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.seconds, 20) << r.err;
  EXPECT_TRUE(contains(r.out, "slot 2 started")) << r.out;  // a later run added the slot
  EXPECT_TRUE(contains(r.err, "generation 1: 3 workers, 1 of them new")) << r.err;
  EXPECT_FALSE(contains(r.err, "did not finish")) << r.err;
}

// A job that listens on loopback and a discovery script that prints 500 remote hosts: one
// warning line names a few of them and the count, not one line per host.
TEST(DiscoveryLeftover, ManyUnusableHostsAreWarnedAboutInOneLine) {
  TempDir dir;
  std::string text = "localhost:2\n";
  for (int i = 1; i <= 500; ++i) {
    text += "10.200." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ":1\n";
  }
  write_file(dir.path / "hosts", "localhost:2\n");
  write_file(dir.path / "later", text);
  const std::string worker =
      "[ \"$HVDRUN_SLOT\" = 0 ] && " + switch_hosts_command(dir, "later") + "; sleep 1.5";
  const auto r =
      run_hvdrun({"-np", "2", "--min-np", "1", "--host-discovery-script", hosts_script(dir),
                  "--discovery-interval", "0.1", "/bin/sh", "-c", worker},
                 {}, std::chrono::seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string warning =
      "warning: discovered 500 hosts 10.200.0.2, 10.200.0.3, 10.200.0.4 and 497 more are remote "
      "but the job started with this machine only";
  EXPECT_TRUE(contains(r.err, warning)) << r.err;
  EXPECT_EQ(r.err.find("are remote"), r.err.rfind("are remote")) << r.err;  // one line
}

}  // namespace
}  // namespace hvdrun::itest
