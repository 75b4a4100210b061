// Integration: --max-restarts in an elastic job (--min-np/--max-np, a discovery script): for
// programs that keep no elastic state. A failure restarts every worker on the slots available
// then (up to --max-np, at least --min-np, counted against --max-restarts); a change of slots
// restarts every worker to take it in (not counted). The workers get no HVDRUN_ELASTIC.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

using std::chrono::seconds;

// What every worker prints first: its generation's size, restart count and elastic mode.
const std::string kReport =
    "echo \"size $WORLD_SIZE restart $TORCHELASTIC_RESTART_COUNT elastic "
    "${HVDRUN_ELASTIC:-no}\";";

std::set<std::string> reports(const std::string& out) {
  std::set<std::string> found;
  const std::regex line(R"(size \d+ restart \d+ elastic \w+)");
  for (const auto& text : lines_of(out)) {
    std::smatch m;
    if (std::regex_search(text, m, line)) found.insert(m.str());
  }
  return found;
}

// -np 2 --min-np 2 --max-np 3 with --max-restarts N on the slots DIR/hosts lists, running
// `worker` (a shell command whose $0 is the init worker).
RunResult restart_job(const TempDir& dir, int max_restarts, const std::string& worker) {
  return run_hvdrun({"-np", "2", "--min-np", "2", "--max-np", "3", "--max-restarts",
                     std::to_string(max_restarts), "--host-discovery-script", hosts_script(dir),
                     "--discovery-interval", "0.1", "/bin/sh", "-c", worker, INIT_WORKER},
                    {}, seconds(60));
}

TEST(RestartElastic, AFailureRestartsEveryWorkerOnTheSlotsAvailableUpToMaxNp) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:3\n");
  // Rank 1 of the first generation fails; the restarted workers initialise and exit 0.
  const std::string worker =
      kReport +
      "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then exit 3; fi;"
      "exec \"$0\"";
  const auto r = restart_job(dir, 2, worker);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, ") exited with code 3; restarting every rank (restart 1 of 2)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 1: 3 workers on the slots available")) << r.err;
  EXPECT_EQ(reports(r.out),
            (std::set<std::string>{"size 3 restart 0 elastic no", "size 3 restart 1 elastic no"}))
      << r.out;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(contains(r.out, "<stdout>:rank " + std::to_string(rank) + " of 3 initialised"))
        << r.out;
  }
  const auto gens = generations(r.err);
  ASSERT_EQ(gens.size(), 2u) << r.err;
  EXPECT_EQ(gens[1].first, 3);
}

TEST(RestartElastic, NewSlotsRestartEveryWorkerWithoutUsingARestart) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n");
  const auto hosts = (dir.path / "hosts").string();
  // The first generation (2 workers) adds a slot and waits to be restarted; the second (3)
  // initialises and exits 0.
  const std::string worker = kReport +
                             "if [ \"$WORLD_SIZE\" = 2 ]; then"
                             "  [ \"$RANK\" = 0 ] && echo localhost:3 > '" +
                             hosts + ".new' && mv '" + hosts + ".new' '" + hosts +
                             "';"
                             "  exec sleep 30; fi;"
                             "exec \"$0\"";
  const auto r = restart_job(dir, 1, worker);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "slots added by the discovery script: restarting every rank to take the "
                       "change in (not counted against --max-restarts)"))
      << r.err;
  EXPECT_EQ(reports(r.out),
            (std::set<std::string>{"size 2 restart 0 elastic no", "size 3 restart 0 elastic no"}))
      << r.out;
  EXPECT_TRUE(contains(r.out, "<stdout>:rank 2 of 3 initialised")) << r.out;
  EXPECT_LT(r.seconds, 20.0);  // the sleepers were stopped, not waited for
}

TEST(RestartElastic, TooFewSlotsForARestartFailAfterTheElasticTimeout) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n");
  const auto hosts = (dir.path / "hosts").string();
  // Rank 1 takes its slot away: the restart that follows finds one slot, below --min-np 2.
  const std::string worker = kReport + "if [ \"$RANK\" = 1 ]; then echo localhost:1 > '" + hosts +
                             ".new' && mv '" + hosts + ".new' '" + hosts + "'; fi; exec sleep 30";
  auto r = run_hvdrun({"-np", "2", "--min-np", "2", "--max-restarts", "3",
                       "--host-discovery-script", hosts_script(dir), "--discovery-interval", "0.1",
                       "--elastic-timeout", "1", "/bin/sh", "-c", worker},
                      {}, seconds(60));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "below --min-np 2: 0 workers left and 1 free slot; waiting up to "
                       "1 s (--elastic-timeout) for slots"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "only 0 workers for 1 s (--elastic-timeout), below --min-np 2"))
      << r.err;
  EXPECT_LT(r.seconds, 20.0);
}

}  // namespace
}  // namespace hvdrun::itest
