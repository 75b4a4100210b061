// Integration: --dry-run prints the plan of a job and starts nothing; a program that cannot
// run here, or a bad host list, is the usual one-line error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

TEST(DryRun, PrintsThePlanAndStartsNothing) {
  TempDir dir;
  const auto marker = dir.path / "ran";
  auto r = run_hvdrun(
      {"--dry-run", "-np", "3", "-H", "localhost:3", "sh", "-c", "touch '" + marker.string() + "'"},
      {}, seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a worker ran";
  EXPECT_TRUE(contains(r.out, "hvdrun --dry-run: 3 ranks on 1 host; nothing started\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank  host                    local   cross   node    gpu\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "2     localhost (here)        2/3     0/1     0/1     2\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "program: sh (/")) << r.out;
  EXPECT_TRUE(contains(r.out, "  WORLD_SIZE=3\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  HVDRUN_SECRET=<the job's secret>\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "HVDRUN_SECRET=x")) << r.out;
  const auto per_rank = r.out.substr(r.out.find("and per rank: "));
  for (const char* name : {"RANK", "LOCAL_RANK", "HOROVOD_RANK", "HVDRUN_SLOT"}) {
    EXPECT_TRUE(contains(per_rank, std::string(" ") + name)) << per_rank;
  }
}

TEST(DryRun, AProgramMissingHereIsAnError) {
  auto r = run_hvdrun({"--dry-run", "-np", "2", "/nonexistent/train"}, {}, seconds(30));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err,
            "hvdrun: error: program '/nonexistent/train' is not found or not executable on this "
            "machine\n");
  EXPECT_EQ(r.out, "");
}

TEST(DryRun, ABadHostFileIsAnError) {
  TempDir dir;
  const auto hostfile = dir.path / "hosts";
  std::ofstream(hostfile) << "localhost slots=2\nnode2 slots=x\n";
  auto r = run_hvdrun({"--dry-run", "--hostfile", hostfile.string(), "true"}, {}, seconds(30));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, hostfile.string() + ":2")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
