// Integration: exit statuses, the failure summary, and errors before any worker runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

// A successful job says nothing but torchrun's OMP_NUM_THREADS notice, and not even that when
// the user chose a value.
TEST(Failure, AllRanksExitingZeroGivesZero) {
  auto r = run_hvdrun({"-np", "3", "/bin/true"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "hvdrun: OMP_NUM_THREADS=1 for every worker (3 share host localhost); set it with -x "
            "OMP_NUM_THREADS=N to tune\n");
  r = run_hvdrun({"-np", "3", "/bin/true"}, {{"OMP_NUM_THREADS", "2"}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(Failure, ExitCodeOfTheFailedRankIsPropagatedAndSummarised) {
  auto r = run_hvdrun({"-np", "4", worker(), "fail", "2", "3"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: rank 2 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, ") exited with code 3; terminating 3 other ranks\n")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: job failed: first failure was rank 2 on localhost: exit "
                       "code 3\n"))
      << r.err;
  // The summary ends with the failed rank's last stderr lines, indented.
  EXPECT_TRUE(contains(r.err, "\n    first stderr line\n    rank 2 failing with 3\n")) << r.err;
  EXPECT_LT(r.seconds, 10.0);
}

TEST(Failure, EarlyCleanExitDoesNotStopOtherRanks) {
  auto r =
      run_hvdrun({"-np", "2", "/bin/sh", "-c", "if [ $RANK = 1 ]; then sleep 0.3; echo late; fi"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[1]<stdout>:late\n");
}

TEST(Failure, DeathBySignalGives128PlusSignalAndNamesIt) {
  auto r = run_hvdrun({"-np", "3", worker(), "signal", "1", std::to_string(SIGSEGV)});
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: rank 1 (host localhost, pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "was killed by signal SIGSEGV (11); terminating 2 other ranks"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "first failure was rank 1 on localhost: killed by signal SIGSEGV "
                       "(11)"))
      << r.err;

  auto k = run_hvdrun({"-np", "2", worker(), "signal", "0", std::to_string(SIGKILL)});
  EXPECT_EQ(k.status, 128 + SIGKILL) << k.err;
  EXPECT_TRUE(contains(k.err, "killed by signal SIGKILL (9)")) << k.err;
}

// Each rank's exec fails; the first failure ends the job, so another rank may be terminated
// before it reached its exec (then it says nothing about the program).
TEST(Failure, MissingProgramIsReportedWithStatus127) {
  auto r = run_hvdrun({"-np", "2", "hvdrun-no-such-program-xyz"});
  EXPECT_EQ(r.status, 127) << r.err;
  const std::string cannot_run =
      ": cannot run 'hvdrun-no-such-program-xyz': No such file or directory";
  EXPECT_TRUE(contains(r.err, "hvdrun: rank 0" + cannot_run + "\n") ||
              contains(r.err, "hvdrun: rank 1" + cannot_run + "\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "hvdrun: job failed: first failure was rank ")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "exit code 127 (cannot run 'hvdrun-no-such-program-xyz': No such "
                       "file or directory)\n"))
      << r.err;
}

// A program that exists but cannot be executed: the shell's 126, not 127.
TEST(Failure, ProgramThatCannotBeExecutedIsReportedWithStatus126) {
  TempDir dir;
  const auto script = dir.path / "not-executable.sh";
  std::ofstream(script) << "#!/bin/sh\necho never\n";  // mode 0644: no execute bit
  auto r = run_hvdrun({"-np", "2", script.string()});
  EXPECT_EQ(r.status, 126) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot run '" + script.string() + "': Permission denied")) << r.err;
  r = run_hvdrun({"-np", "1", dir.path.string()});  // a directory
  EXPECT_EQ(r.status, 126) << r.err;
  const auto broken = dir.path / "broken-binary";  // a NUL in its first line: not a script
  std::ofstream(broken) << std::string(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0garbage\n",
      18);
  std::filesystem::permissions(broken, std::filesystem::perms::owner_all);
  r = run_hvdrun({"-np", "1", broken.string()});
  EXPECT_EQ(r.status, 126) << r.err;
  EXPECT_TRUE(contains(r.err, "Exec format error")) << r.err;
}

// An executable script without "#!" runs under /bin/sh, as execvp, the shells and horovodrun
// run it; its arguments arrive as given.
TEST(Failure, AScriptWithoutAnInterpreterLineRunsUnderTheShell) {
  TempDir dir;
  const auto script = dir.path / "no-shebang.sh";
  std::ofstream(script) << "echo \"args: $1|$2\"\nexit 3\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const auto r = run_hvdrun({"-np", "1", script.string(), "a", "b c"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:args: a|b c\n") << r.err;
}

// Two names of this machine (horovodrun's one-machine set-up) run as one host with the sum of
// their slots: local ranks 0 and 1, not two ranks 0 on one GPU.
TEST(Failure, TwoNamesOfThisMachineRunAsOneHost) {
  const std::string worker =
      "echo \"rank $RANK local $HOROVOD_LOCAL_RANK of $HOROVOD_LOCAL_SIZE\"";
  auto r = run_hvdrun({"-H", "localhost:1,127.0.0.1:1", "/bin/sh", "-c", worker});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "hvdrun: 'localhost' (-H) and '127.0.0.1' (-H) both name this machine: "
                       "they run as one host, 'localhost', with 2 slots (local ranks and GPUs "
                       "count one machine's slots)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:rank 0 local 0 of 2")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1]<stdout>:rank 1 local 1 of 2")) << r.out;
  r = run_hvdrun({"-np", "2", "-H", "localhost:2,127.0.0.1:2", "/bin/true"});  // unused entry
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "name this machine")) << r.err;
}

TEST(Failure, UsageErrorsExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> cases = {
      {"--no-such-flag", "-np", "1", "/bin/true"},
      {"-np", "0", "/bin/true"},
      {"-np", "2"},
      {"-np", "1", "--ssh-host-key-check", "maybe", "/bin/true"},
  };
  for (const auto& args : cases) {
    auto r = run_hvdrun(args);
    EXPECT_EQ(r.status, 2) << args[0] << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("hvdrun: error: ")) << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace hvdrun::itest

namespace hvdrun::itest {
namespace {

// Runs `hvdrun -np 40 /bin/true` under `ulimit <flags> 64`; returns {status, stderr}.
std::pair<int, std::string> run_with_open_file_limit(const std::string& flags) {
  TempDir dir;
  const auto err = dir.path / "err";
  const std::string command = "sh -c 'ulimit " + flags + " 64 && exec \"" +
                              std::string(HVDRUN_BINARY) + "\" -np 40 /bin/true' 2>'" +
                              err.string() + "'";
  const int rc = std::system(("timeout -s KILL 60 " + command).c_str());
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text};
}

// hvdrun's stdout is /dev/full: the workers succeed, but the job does not (exit 1), and
// stderr says which output was lost and why.
TEST(Failure, OutputThatCannotBeWrittenFailsTheJob) {
  TempDir dir;
  const auto err = dir.path / "err";
  const std::string command = "timeout -s KILL 60 \"" + std::string(HVDRUN_BINARY) +
                              "\" -np 2 /bin/sh -c 'echo out; echo err >&2' >/dev/full 2>'" +
                              err.string() + "'";
  const int rc = std::system(command.c_str());
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(rc)) << text;
  EXPECT_EQ(WEXITSTATUS(rc), 1) << text;
  EXPECT_TRUE(contains(text,
                       "stdout to hvdrun's stdout: No space left on device; later output "
                       "to it is lost"))
      << text;
  EXPECT_TRUE(contains(text,
                       "hvdrun: job failed: the workers succeeded but their output is "
                       "incomplete: cannot write rank "))
      << text;
  EXPECT_TRUE(contains(text, "<stderr>:err")) << text;
}

// hvdrun's stderr is /dev/full and its own first line (the OMP_NUM_THREADS notice of a
// 2-rank job) is what fails: the workers' stderr lost after it still fails the job.
TEST(Failure, OutputLostAfterHvdrunsOwnLineFailedFailsTheJob) {
  // Without OMP_NUM_THREADS in its environment, hvdrun prints that notice first.
  const std::string command = "env -u OMP_NUM_THREADS timeout -s KILL 60 \"" +
                              std::string(HVDRUN_BINARY) +
                              "\" -np 2 /bin/sh -c 'echo important >&2' 2>/dev/full";
  const int rc = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 1);
}

// hvdrun started with its stdout closed (`>&-`): the workers' stdout cannot be written, as
// with a full disk, and the job fails naming it. A job that prints nothing there succeeds;
// --version and --help fail as well (and on a full disk).
TEST(Failure, AClosedStdoutIsAWriteErrorNotASilentLoss) {
  TempDir dir;
  const auto err = dir.path / "err";
  const auto run = [&](const std::string& worker) {
    const std::string command = "timeout -s KILL 60 \"" + std::string(HVDRUN_BINARY) +
                                "\" -np 2 /bin/sh -c '" + worker + "' >&- 2>" + err.string();
    const int rc = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(rc));
    return WEXITSTATUS(rc);
  };
  EXPECT_EQ(run("echo lost"), 1);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(text, "stdout to hvdrun's stdout: Bad file descriptor")) << text;
  EXPECT_EQ(run("echo kept >&2"), 0);
  for (const std::string args : {"--version >&-", "--help >/dev/full"}) {
    const std::string command = "\"" + std::string(HVDRUN_BINARY) + "\" " + args + " 2>/dev/null";
    const int rc = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << args << ": " << rc;
  }
}

// `hvdrun ... | head -1`: a rank that then fails, by SIGPIPE or by its own error on EPIPE
// (as Python's BrokenPipeError does), is said to have lost its reader.
TEST(Failure, ARankEndedByAReaderThatWentAwayIsSaidToBe) {
  TempDir dir;
  const auto err = dir.path / "err";
  const auto script = dir.path / "worker.sh";
  for (const bool ignores_sigpipe : {false, true}) {
    std::ofstream(script) << (ignores_sigpipe ? "trap '' PIPE\nwhile echo x; do :; done\nexit 5\n"
                                              : "exec yes\n");
    const std::string command =
        "bash -c 'set -o pipefail; env -u OMP_NUM_THREADS timeout -s KILL 60 " +
        std::string(HVDRUN_BINARY) + " -np 2 /bin/sh " + script.string() + " 2>" + err.string() +
        " | head -1 >/dev/null'";
    const int rc = std::system(command.c_str());
    std::ifstream in(err);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_TRUE(WIFEXITED(rc)) << text;
    EXPECT_EQ(WEXITSTATUS(rc), ignores_sigpipe ? 5 : 128 + SIGPIPE) << text;
    EXPECT_TRUE(contains(text, ignores_sigpipe
                                   ? "exit code 5 (after hvdrun's output was closed by its "
                                     "reader, e.g. `| head`)"
                                   : "killed by signal SIGPIPE (13) (hvdrun's output was closed "
                                     "by its reader, e.g. `| head`)"))
        << text;
  }
}

TEST(Failure, SoftOpenFileLimitIsRaisedToTheHardLimit) {
  auto [status, err] = run_with_open_file_limit("-S -n");
  EXPECT_EQ(status, 0) << err;
}

// 40 workers cannot fit under a hard limit of 64 open files: the job fails before it starts
// any, and says what to raise.
TEST(Failure, OpenFileLimitTooLowFailsBeforeSpawningAndNamesTheRemedy) {
  auto [status, err] = run_with_open_file_limit("-n");
  EXPECT_EQ(status, 1) << err;
  EXPECT_NE(err.find("cannot start 40 local workers: they need about "), std::string::npos) << err;
  EXPECT_NE(err.find("more than the open-file limit 64 (hard 64): raise ulimit -n"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("[0]<"), std::string::npos) << err;  // no worker ran
}

}  // namespace
}  // namespace hvdrun::itest

namespace hvdrun::itest {
namespace {

TEST(Failure, FailedRanksLastLinesComeBeforeTheTerminationNote) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto r = run_hvdrun({"-np", "2", worker(), "fail", "1", "3"});
    EXPECT_EQ(r.status, 3) << r.err;
    const auto last_line = r.err.find("[1]<stderr>:rank 1 failing with 3");
    const auto note = r.err.find("hvdrun: rank 1 (host localhost");
    ASSERT_NE(last_line, std::string::npos) << r.err;
    ASSERT_NE(note, std::string::npos) << r.err;
    EXPECT_LT(last_line, note) << r.err;
  }
}

}  // namespace
}  // namespace hvdrun::itest
