// Integration: elastic jobs on the hosts of a --host-discovery-script. The real hvdrun runs
// examples/train_elastic on this machine; the script prints what a file of the test says, so
// the test adds and removes slots while the job runs. Also the script's failures: the first
// one ends the launch with the script's own words, later ones only warn; a hung script is
// killed; garbage is named by line; a host that keeps failing waits out a growing cooldown.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"
#include "tests/support/files.h"
#include "tests/support/wait_until.h"

namespace hvdrun::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Discovery, TheJobGrowsToMaxNpWhenSlotsAppearAndShrinksWhenTheyGo) {
  TempDir dir;
  write_file(dir.path / "hosts", "# two slots for now\nlocalhost:2\n");
  const auto script = hosts_script(dir);
  HvdrunProcess job(elastic_job(dir,
                                {"-np", "2", "--min-np", "1", "--max-np", "3",
                                 "--host-discovery-script", script, "--discovery-interval", "0.1"},
                                8));
  wait_for_pids(dir.path, 2, seconds(20));
  write_file(dir.path / "hosts", "  localhost:5  \n\n");  // more than --max-np allows
  const pid_t newcomer = pid_of_slot(dir, 2, 3);
  ASSERT_TRUE(job.wait_for_output("pid " + std::to_string(newcomer) + " starts as rank", 1))
      << "the newcomer joined generation 1";
  write_file(dir.path / "hosts", "localhost:2\n");
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 1: 3 workers, 1 of them new")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "the discovery script no longer lists the slots of rank 2 (host "
                       "localhost): they leave the job at its next commit"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "pid " + std::to_string(newcomer) + " left the job: ")) << r.out;
  const auto done = finished(r.out);
  ASSERT_EQ(done.size(), 2u) << r.out;
  for (const auto& [pid, entry] : done) EXPECT_EQ(entry.first, 2) << r.out;
  expect_one_hash(done, r.out);
  EXPECT_TRUE(contains(r.out, "applied 65536 samples of 65536; all ranks agree")) << r.out;
  const auto gens = generations(r.err);
  ASSERT_EQ(gens.size(), 3u) << r.err;
  EXPECT_EQ(gens[0].first, 2);
  EXPECT_EQ(gens[1].first, 3);
  EXPECT_EQ(gens[2].first, 2);
}

TEST(Discovery, TheJobWaitsForNpSlotsAndFailsAfterTheElasticTimeout) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:1\n");
  const auto script = hosts_script(dir);
  auto r = run_hvdrun({"-np", "2", "--host-discovery-script", script, "--discovery-interval", "0.1",
                       "--elastic-timeout", "1", TRAIN_ELASTIC});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "the discovery script gives 1 of the 2 slots -np needs; waiting up "
                       "to 1 s (--elastic-timeout)"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: error: the discovery script gave only 1 of the 2 slots -np "
                       "needs for 1 s (--elastic-timeout)"))
      << r.err;

  HvdrunProcess job(elastic_job(dir,
                                {"-np", "2", "--host-discovery-script", script,
                                 "--discovery-interval", "0.1", "--elastic-timeout", "30"},
                                1));
  ASSERT_TRUE(job.wait_for_output("slots -np needs; waiting up to 30 s", 1));
  write_file(dir.path / "hosts", "localhost:2\n");
  r = job.finish(seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "applied 8192 samples of 8192; all ranks agree")) << r.out;
}

// A signal while hvdrun waits for the script's first -np slots ends it with 128 + the
// signal's number, as it does once the job runs.
TEST(Discovery, ASignalDuringTheWaitForTheFirstSlotsExitsWithItsStatus) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:1\n");
  for (const auto& [signo, name] :
       {std::pair{SIGINT, "SIGINT"}, std::pair{SIGTERM, "SIGTERM"}, std::pair{SIGHUP, "SIGHUP"}}) {
    const auto ran = dir.path / "ran";  // the script ran: hvdrun waits, its signals are set
    std::filesystem::remove(ran);
    HvdrunProcess job({"-np", "2", "--host-discovery-script",
                       hosts_script(dir, "touch '" + ran.string() + "'\n"), "--discovery-interval",
                       "0.1", "--elastic-timeout", "30", "/bin/true"});
    for (int i = 0; i < 2000 && !std::filesystem::exists(ran); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_TRUE(std::filesystem::exists(ran));
    job.signal(signo);
    const auto r = job.finish(seconds(30));
    EXPECT_EQ(r.status, 128 + signo) << r.err;
    EXPECT_TRUE(contains(r.err, std::string("hvdrun: error: interrupted (") + name +
                                    ") while waiting for the discovery script's 2 slots"))
        << r.err;
  }
}

TEST(Discovery, AFirstRunThatFailsHangsOrPrintsGarbageEndsTheLaunch) {
  TempDir dir;
  write_file(dir.path / "fail.sh", "echo 'no inventory' >&2\nexit 3\n");
  auto r = run_hvdrun({"-np", "1", "--host-discovery-script",
                       "/bin/sh " + (dir.path / "fail.sh").string(), "/bin/true"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: error: discovery script '/bin/sh " +
                                  (dir.path / "fail.sh").string() +
                                  "' failed: exit code 3 (stderr: 'no inventory')"))
      << r.err;

  write_file(dir.path / "garbage.sh", "echo localhost:2\necho 'localhost:x'\n");
  const std::string garbage = "/bin/sh " + (dir.path / "garbage.sh").string();
  r = run_hvdrun({"-np", "1", "--host-discovery-script", garbage, "/bin/true"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(
      r.err, "discovery script '" + garbage + "' line 2: bad slot count 'x' in 'localhost:x'"))
      << r.err;

  write_file(dir.path / "hang.sh",
             "echo $$ > '" + (dir.path / "hang.pid").string() + "'\nexec sleep 60\n");
  const std::string hang = "/bin/sh " + (dir.path / "hang.sh").string();
  r = run_hvdrun(
      {"-np", "1", "--host-discovery-script", hang, "--discovery-timeout", "0.5", "/bin/true"}, {},
      seconds(20));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "discovery script '" + hang +
                                  "' did not finish within 500 ms (--discovery-timeout): killed"))
      << r.err;
  pid_t sleeper = -1;
  std::ifstream(dir.path / "hang.pid") >> sleeper;
  ASSERT_GT(sleeper, 0);
  // Killed with its group before hvdrun exits; on a loaded machine it may take a moment to go.
  EXPECT_TRUE(wait_until_gone({sleeper}, std::chrono::milliseconds(2000)).empty());

  // --elastic-timeout ends the wait before the script's first run did: said so, not "0 slots".
  std::filesystem::remove(dir.path / "hang.pid");
  r = run_hvdrun({"-np", "1", "--host-discovery-script", hang, "--discovery-timeout", "30",
                  "--elastic-timeout", "1", "/bin/true"},
                 {}, seconds(20));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: error: the discovery script did not finish a run in 1 s "
                       "(--elastic-timeout)"))
      << r.err;
  sleeper = -1;
  std::ifstream(dir.path / "hang.pid") >> sleeper;
  ASSERT_GT(sleeper, 0);
  // Killed with its group before hvdrun exits; on a loaded machine it may take a moment to go.
  EXPECT_TRUE(wait_until_gone({sleeper}, std::chrono::milliseconds(2000)).empty());
}

TEST(Discovery, LaterFailuresWarnOnceAndTheJobKeepsItsHosts) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n");
  const auto broken = (dir.path / "broken").string();
  const auto failures = dir.path / "failures";  // a line per failed run
  const auto script =
      hosts_script(dir, "if [ -e '" + broken + "' ]; then echo x >> '" + failures.string() +
                            "'; echo 'api down' >&2; exit 1; fi\n");
  HvdrunProcess job(elastic_job(dir,
                                {"-np", "2", "--max-np", "3", "--host-discovery-script", script,
                                 "--discovery-interval", "0.1"},
                                6));
  wait_for_pids(dir.path, 2, seconds(20));
  write_file(broken, "");
  ASSERT_TRUE(hvdrun::test::wait_until(
      [&] { return count_of(hvdrun::test::read_file(failures), "x") >= 4; }, seconds(30)))
      << "the discovery script did not fail four times";
  write_file(dir.path / "hosts", "localhost:3\n");
  std::filesystem::remove(broken);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err,
                     "failed: exit code 1 (stderr: 'api down'); the job keeps the hosts it "
                     "has"),
            1u)
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: the discovery script works again")) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 1: 3 workers, 1 of them new")) << r.err;
  EXPECT_TRUE(contains(r.out, "applied 49152 samples of 49152; all ranks agree")) << r.out;
}

TEST(Discovery, AHostThatKeepsFailingWaitsOutADoublingCooldownWhileStillListed) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:3\n");
  const auto script = hosts_script(dir);
  HvdrunProcess job(
      elastic_job(dir,
                  {"-np", "3", "--min-np", "2", "--host-discovery-script", script,
                   "--discovery-interval", "0.1", "--blacklist-cooldown-range", "1", "4"},
                  8));
  ASSERT_EQ(::kill(pid_of_slot(dir, 2, 3), SIGKILL), 0);
  const pid_t second = pid_of_slot(dir, 3, 4);  // the replacement, after the cooldown
  ASSERT_TRUE(job.wait_for_output("pid " + std::to_string(second) + " starts as rank", 1))
      << "the replacement joined";
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "host localhost unused for 1 s")) << r.err;
  EXPECT_TRUE(contains(r.err, "host localhost unused for 2 s")) << r.err;
  const auto gens = generations(r.err);
  ASSERT_EQ(gens.size(), 5u) << r.err;  // 3, 2, 3 (after 1 s), 2, 3 (after 2 s)
  EXPECT_EQ(gens[1].first, 2);
  EXPECT_EQ(gens[2].first, 3);
  EXPECT_GE(gens[2].second - gens[1].second, 0.95) << r.err;
  EXPECT_GE(gens[4].second - gens[3].second, 1.95) << r.err;
  EXPECT_TRUE(contains(r.out, "applied 65536 samples of 65536; all ranks agree")) << r.out;
}

// A host the job cannot reach at its start (nothing listens on its ssh port) is left out
// when the other slots reach --min-np: the job runs on them. With a --min-np they do not
// reach, the job fails naming the host, as a static job does.
TEST(Discovery, AHostUnreachableAtTheStartIsLeftOutWhenTheOthersReachMinNp) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n0.0.0.0:2\n");
  const std::vector<std::string> common = {"--max-np",
                                           "4",
                                           "--host-discovery-script",
                                           hosts_script(dir),
                                           "--discovery-interval",
                                           "0.1",
                                           "--ssh-port",
                                           "1"};
  auto flags = common;
  flags.insert(flags.begin(), {"-np", "2", "--min-np", "2"});
  auto r = run_hvdrun(elastic_job(dir, flags, 1), {}, seconds(60));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: warning: cannot use host 0.0.0.0: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "; the job starts without its 2 slots")) << r.err;
  EXPECT_TRUE(contains(r.out, "applied 8192 samples of 8192; all ranks agree")) << r.out;
  EXPECT_EQ(count_of(r.out, "starts as rank"), 2u) << r.out;

  flags = common;
  flags.insert(flags.begin(), {"-np", "3", "--min-np", "3"});
  r = run_hvdrun(elastic_job(dir, flags, 1), {}, seconds(60));
  EXPECT_EQ(r.status, 255) << r.err;
  EXPECT_TRUE(contains(r.err, "job failed: cannot start the ranks of host 0.0.0.0: ")) << r.err;
}

// A newcomer whose slot is removed before its init() reaches the rendezvous leaves the job
// (exit 0, "left the job"); the others finish.
TEST(Discovery, ANewcomerWhoseSlotGoesBeforeItJoinedLeavesCleanly) {
  TempDir dir;
  write_file(dir.path / "hosts", "localhost:2\n");
  HvdrunProcess job(
      elastic_job(dir,
                  {"-np", "2", "--min-np", "1", "--max-np", "3", "--host-discovery-script",
                   hosts_script(dir), "--discovery-interval", "0.1"},
                  4, "if [ \"$HVDRUN_SLOT\" -ge 2 ]; then sleep 2; fi; "));
  wait_for_pids(dir.path, 2, seconds(20));
  write_file(dir.path / "hosts", "localhost:3\n");
  std::this_thread::sleep_for(milliseconds(800));  // started; it sleeps before init()
  write_file(dir.path / "hosts", "localhost:2\n");
  const auto r = job.finish(seconds(90));
  const pid_t newcomer = pid_of_slot(dir, 2, 3);  // written after its sleep
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: generation 1: 3 workers, 1 of them new")) << r.err;
  EXPECT_TRUE(contains(r.out, "pid " + std::to_string(newcomer) + " left the job: ")) << r.out;
  EXPECT_TRUE(contains(r.err, "left the job with its slot: exited with code 0")) << r.err;
  EXPECT_TRUE(contains(r.out, "applied 32768 samples of 32768; all ranks agree")) << r.out;
}

// A job on the hosts `first` whose rank 0 exits 0 at once; 0.3 s later rank 1 makes the
// discovery script print `then`, and the other ranks stay until discovery has seen it. Each
// worker prints "started as rank R".
RunResult finish_then_list(const TempDir& dir, const std::string& first, const std::string& then,
                           std::vector<std::string> flags) {
  write_file(dir.path / "hosts", first);
  const auto hosts = (dir.path / "hosts").string();
  const std::string worker =
      "echo \"started as rank $RANK\"; [ \"$RANK\" = 0 ] && exit 0; sleep 0.3; "
      "[ \"$RANK\" = 1 ] && echo '" +
      then + "' > '" + hosts + ".new' && mv '" + hosts + ".new' '" + hosts + "'; sleep 1.5";
  for (const std::string& a : {std::string("--host-discovery-script"), hosts_script(dir),
                               std::string("--discovery-interval"), std::string("0.1"),
                               std::string("/bin/sh"), std::string("-c"), worker}) {
    flags.push_back(a);
  }
  return run_hvdrun(flags, {}, seconds(60));
}

// Once a worker has exited 0 the job is ending: slots that appear afterwards start no one.
TEST(Discovery, AJobWhoseWorkersBeganToFinishDoesNotGrow) {
  TempDir dir;
  const auto r = finish_then_list(dir, "localhost:2\n", "localhost:3",
                                  {"-np", "2", "--min-np", "1", "--max-np", "3"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 2u) << r.out;  // the two first workers only
  EXPECT_FALSE(contains(r.err, "generation 1")) << r.err;
}

// The same after a removal: once rank 0 has exited 0, the script drops rank 2's slot; the
// re-formation that follows starts no one on the finished worker's slot (that newcomer
// would run the training again).
TEST(Discovery, ARemovalAfterAWorkerFinishedStartsNoOneOnItsSlot) {
  TempDir dir;
  const auto r =
      finish_then_list(dir, "localhost:3\n", "localhost:2", {"-np", "3", "--min-np", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "started as rank"), 3u) << r.out;  // the three first workers only
  EXPECT_TRUE(contains(r.err, "no longer lists the slots of rank 2")) << r.err;
  EXPECT_FALSE(contains(r.err, "of them new")) << r.err;
}

// A worker that stores a key in Horovod's rendezvous (the PUT of hvd.init(), here from bash)
// makes the job's host changes go to its rank 0's notification service: a slot added while no
// worker registered one (with hvd.elastic.run) waits for it, and nobody new is started; the job
// ends as its workers do.
TEST(Discovery, AHostChangeOfAHorovodJobWaitsForRankZerosRegistration) {
  TempDir dir;
  const auto d = dir.path.string();
  write_file(dir.path / "hosts", "localhost:2\n");
  const std::string worker =
      "exec 3<>/dev/tcp/$HOROVOD_GLOO_RENDEZVOUS_ADDR/$HOROVOD_GLOO_RENDEZVOUS_PORT || exit 9;"
      "printf 'PUT /global/%s HTTP/1.1\\r\\nHost: h\\r\\nContent-Length: 1\\r\\n\\r\\nx' $RANK >&3;"
      "head -1 <&3; echo $$ > " +
      d +
      "/$RANK.pid;"
      "for i in $(seq 200); do [ -e " +
      d + "/stop ] && exit 0; sleep 0.05; done; exit 4";
  HvdrunProcess job({"-np", "2", "--min-np", "1", "--max-np", "3", "--host-discovery-script",
                     hosts_script(dir), "--discovery-interval", "0.1", "/bin/bash", "-c", worker});
  wait_for_pids(dir.path, 2, seconds(20));
  write_file(dir.path / "hosts", "localhost:3\n");
  std::this_thread::sleep_for(milliseconds(1000));  // ten discovery intervals
  write_file(dir.path / "stop", "");
  const auto r = job.finish(seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "HTTP/1.1 200"), 2u) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "the job runs Horovod; its workers re-form after a failure, and "
                       "host changes are sent to its rank 0"))
      << r.err;
  EXPECT_EQ(count_of(r.err,
                     "slots added (slots added by the discovery script); the Horovod workers "
                     "are told once rank 0 has registered its notification service"),
            1u)
      << r.err;
  EXPECT_FALSE(contains(r.err, "generation 1")) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
