// Integration: hvdrun --preflight on this machine, with the real hvdrun-preflight probes: a
// passing check runs the job after its table; a program that is missing fails the job before
// any worker starts, naming the host and the check; --preflight-only exits by the verdict.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

// A copy of hvdrun in `dir`, with `probe` (a shell script, if not empty) as the hvdrun-preflight
// beside it: the probe each of its preflights runs.
std::string hvdrun_with_probe(const TempDir& dir, const std::string& probe) {
  const auto hvdrun = dir.path / "hvdrun";
  std::filesystem::copy_file(HVDRUN_BINARY, hvdrun);
  std::filesystem::permissions(hvdrun, std::filesystem::perms::owner_all);
  if (!probe.empty()) {
    const auto path = dir.path / "hvdrun-preflight";
    std::ofstream(path) << probe;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }
  return hvdrun.string();
}

TEST(Preflight, APassingCheckIsTabledAndTheJobRuns) {
  TempDir dir;
  const auto timeline = (dir.path / "t.json").string();
  const auto r = run_hvdrun(
      {"-np", "2", "--preflight", "--timeline", timeline, "sh", "-c", "echo ran as $RANK"}, {},
      seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: preflight of 1 host in ")) << r.err;
  EXPECT_TRUE(contains(r.err, "GEMM GFLOP/s")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun:   localhost  ok    ok ")) << r.err;
  // Two slots without GPUs: the host's probes timed an allreduce among themselves.
  EXPECT_TRUE(contains(r.err, "host GB/s")) << r.err;
  EXPECT_TRUE(contains(r.err, "host allreduce ")) << r.err;
  EXPECT_TRUE(contains(r.out, "ran as 0")) << r.out;
  EXPECT_TRUE(contains(r.out, "ran as 1")) << r.out;
  EXPECT_FALSE(contains(r.out, "HVDRUN_PREFLIGHT")) << r.out;  // the reports are read, not shown
  // The verdict is in the job's timeline.
  std::ifstream in(timeline);
  const std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(trace, R"("name":"preflight")")) << trace;
  EXPECT_TRUE(contains(trace, R"("localhost":"ok")")) << trace;
}

TEST(Preflight, AMissingProgramFailsTheJobBeforeAnyWorkerStarts) {
  TempDir dir;
  const std::string marker = (dir.path / "started").string();
  const std::string missing = (dir.path / "no-such-program").string();
  const auto r = run_hvdrun({"-np", "2", "--preflight", missing, marker}, {}, seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "FAIL: program: " + missing + " is not an executable file here"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: error: preflight: host localhost failed its preflight "
                       "check (program: " +
                           missing +
                           " is not an executable file here); no worker was "
                           "started"))
      << r.err;
}

TEST(Preflight, PreflightOnlyExitsByTheVerdict) {
  const auto ok = run_hvdrun({"-np", "1", "--preflight-only", "sh"}, {}, seconds(60));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(contains(ok.err, "ok\n")) << ok.err;
  const auto bad =
      run_hvdrun({"-np", "1", "--preflight-only", "no-such-program-here"}, {}, seconds(60));
  EXPECT_EQ(bad.status, 1) << bad.err;
  EXPECT_TRUE(contains(bad.err, "FAIL: program: no-such-program-here is not on PATH here"))
      << bad.err;
}

TEST(Preflight, AMissingProbeIsNamedAndNothingStarts) {
  TempDir dir;
  const std::string hvdrun = hvdrun_with_probe(dir, "");  // without hvdrun-preflight beside it
  const auto marker = dir.path / "ran";
  HvdrunProcess job(hvdrun, {"-np", "1", "--preflight", "touch", marker.string()}, {}, "/dev/null");
  const auto r = job.finish(seconds(30));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: error: preflight: its probe " +
                                  (dir.path / "hvdrun-preflight").string() + " is not there"))
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// A probe that hangs (here one that never joins the others) is stopped at --preflight-timeout:
// hvdrun ends, its host fails for want of a report, and no probe is left running.
TEST(Preflight, AProbeThatHangsIsStoppedAtTheTimeoutAndFailsItsHost) {
  TempDir dir;
  // The shell and its child both hang.
  const std::string hvdrun = hvdrun_with_probe(dir, "#!/bin/sh\nsleep 612.5\n");
  HvdrunProcess job(hvdrun, {"-np", "2", "--preflight-only", "--preflight-timeout", "2", "true"},
                    {}, "/dev/null");
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "FAIL: no report from 2 of its 2 probes")) << r.err;
  // ([x] keeps pgrep from finding its own shell.)
  EXPECT_NE(
      std::system(("pgrep -f '" + dir.path.string() + "/[h]vdrun-preflight' >/dev/null").c_str()),
      0)
      << "a probe outlived hvdrun";
  EXPECT_NE(std::system("pgrep -f '[s]leep 612.5' >/dev/null"), 0)
      << "a probe's child outlived hvdrun";
}

// A probe that joins the others and then hangs in its own code (its runtime still sends
// heartbeats, as a probe stuck in a GPU call does): only the preflight's limit ends the run,
// half of --preflight-timeout after the probes started.
TEST(Preflight, AJoinedProbeThatHangsIsStoppedAtThePreflightsLimit) {
  TempDir dir;
  // Rank 0 sleeps 600 s before its first allreduce; rank 1 waits for it in the collective.
  const std::string hvdrun =
      hvdrun_with_probe(dir, std::string("#!/bin/sh\nexec ") + STALL_WORKER + " 2 0 1 600\n");
  HvdrunProcess job(hvdrun, {"-np", "2", "--preflight-only", "--preflight-timeout", "4", "true"},
                    {}, "/dev/null");
  const auto r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: preflight: the checks ran past their half of "
                       "--preflight-timeout 4 s: the probes still running were stopped"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "ranks")) << r.err;  // the probes' run is not told as a job
  EXPECT_TRUE(contains(r.err,
                       "FAIL: no report from 2 of its 2 probes (the checks ran past "
                       "--preflight-timeout)"))
      << r.err;
}

// One probe's checks crash (their process dies of SIGABRT, as at an abort() in a GPU driver): the
// probe still reports at once, naming the signal; its host fails with that cause, well before the
// preflight's limit, and the probes' run is not told as a job's ranks.
TEST(Preflight, AProbeWhoseChecksCrashFailsItsHostAtOnceNamingTheSignal) {
  TempDir dir;
  const std::string hvdrun =
      hvdrun_with_probe(dir, probe_whose_checks_crash("[ \"$LOCAL_RANK\" = 1 ]"));
  HvdrunProcess job(hvdrun, {"-np", "2", "--preflight-only", "--preflight-timeout", "60", "true"},
                    {}, "/dev/null");
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "FAIL: its checks crashed (SIGABRT)")) << r.err;
  // Not at the preflight's limit (30 s): the other probe goes on without the crashed one
  // (joining waits 15 s at most).
  EXPECT_FALSE(contains(r.err, "ran past")) << r.err;
  EXPECT_FALSE(contains(r.err, "ranks")) << r.err;
}

TEST(Preflight, DryRunChecksNothing) {
  const auto r = run_hvdrun({"-np", "2", "--preflight", "--dry-run", "true"}, {}, seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "preflight of")) << r.err;
  EXPECT_FALSE(contains(r.out + r.err, "HVDRUN_PREFLIGHT"));
}

}  // namespace
}  // namespace hvdrun::itest
