// parse_cli: every flag, argparse-style prefixes and single-dash spellings, where the command
// begins, -x forms, defaults from the environment, and the one-line UsageError of bad input.
#include "launcher/cli/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>

#include "hvdrun/error.h"
#include "launcher/cli/cli_options.h"
#include "tests/launcher/cli/cli_test_util.h"

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Cli, MinimalJobHasDefaults) {
  const auto spec = spec_of({"-np", "2", "./train", "--lr", "0.1"});
  EXPECT_EQ(spec.num_proc, 2);
  EXPECT_THAT(spec.command, ElementsAre("./train", "--lr", "0.1"));
  ASSERT_EQ(spec.hosts.size(), 1u);
  EXPECT_EQ(spec.hosts[0], (HostSpec{"", "localhost", 2, "default"}));
  EXPECT_EQ(spec.start_timeout, std::chrono::seconds(30));
  EXPECT_EQ(spec.grace_period, std::chrono::milliseconds(5000));
  EXPECT_THAT(spec.forward_signals, ElementsAre(SIGHUP, SIGUSR1, SIGUSR2));
  EXPECT_EQ(spec.log_level, "warn");
  EXPECT_FALSE(spec.output_dir.has_value());
  EXPECT_FALSE(spec.prefix_timestamp);
  EXPECT_FALSE(spec.verbose);
  EXPECT_TRUE(spec.network_interfaces.empty());
  EXPECT_TRUE(spec.env_forward.empty());
  EXPECT_EQ(spec.ssh_port, 0);
  EXPECT_EQ(spec.ssh_identity_file, "");
}

TEST(Cli, NumProcSpellings) {
  EXPECT_EQ(spec_of({"--num-proc", "3", "p"}).num_proc, 3);
  EXPECT_EQ(spec_of({"--num-proc=4", "p"}).num_proc, 4);
  EXPECT_EQ(spec_of({"-np=5", "p"}).num_proc, 5);
  EXPECT_EQ(spec_of({"--num-p", "6", "p"}).num_proc, 6);  // prefix
}

TEST(Cli, EveryFlagIsStored) {
  const auto spec = spec_of({"-np",
                             "2",
                             "--start-timeout",
                             "45",
                             "--grace-period",
                             "2.5",
                             "--output-filename",
                             "/tmp/out",
                             "--prefix-output-with-timestamp",
                             "--verbose",
                             "--log-level",
                             "DEBUG",
                             "--network-interface",
                             "eth0",
                             "--network-interfaces",
                             "eth1,ib0",
                             "-p",
                             "2222",
                             "-i",
                             "/keys/id",
                             "-x",
                             "A=1",
                             "prog"});
  EXPECT_EQ(spec.start_timeout, std::chrono::seconds(45));
  EXPECT_EQ(spec.grace_period, std::chrono::milliseconds(2500));
  EXPECT_EQ(spec.output_dir, "/tmp/out");
  EXPECT_TRUE(spec.prefix_timestamp);
  EXPECT_TRUE(spec.verbose);
  EXPECT_EQ(spec.log_level, "debug");
  EXPECT_THAT(spec.network_interfaces, ElementsAre("eth0", "eth1", "ib0"));
  EXPECT_EQ(spec.ssh_port, 2222);
  EXPECT_EQ(spec.ssh_identity_file, "/keys/id");
  EXPECT_THAT(spec.env_forward, ElementsAre(EnvForward{"A", "1"}));
  EXPECT_THAT(spec.command, ElementsAre("prog"));
}

TEST(Cli, LongNamesOfShortOptions) {
  const auto spec =
      spec_of({"--hosts", "localhost:2", "--ssh-port", "22", "--ssh-identity-file", "k", "prog"});
  EXPECT_EQ(spec.hosts[0].name, "localhost");
  EXPECT_EQ(spec.ssh_port, 22);
  EXPECT_EQ(spec.ssh_identity_file, "k");
}

TEST(Cli, UnambiguousPrefixesAreAccepted) {
  const auto spec = spec_of({"-np", "1", "--verb", "--start", "7", "--grace", "0", "--out", "d",
                             "--prefix-out", "--log-l", "info", "--ssh-p", "23", "prog"});
  EXPECT_TRUE(spec.verbose);
  EXPECT_EQ(spec.start_timeout, std::chrono::seconds(7));
  EXPECT_EQ(spec.grace_period, std::chrono::milliseconds(0));
  EXPECT_EQ(spec.output_dir, "d");
  EXPECT_TRUE(spec.prefix_timestamp);
  EXPECT_EQ(spec.log_level, "info");
  EXPECT_EQ(spec.ssh_port, 23);
}

TEST(Cli, AmbiguousPrefixNamesTheCandidates) {
  const auto ver = error_of({"-np", "1", "--ver", "p"});
  EXPECT_THAT(ver, HasSubstr("ambiguous option '--ver'"));
  EXPECT_THAT(ver, HasSubstr("--verbose"));
  EXPECT_THAT(ver, HasSubstr("--version"));
  const auto host = error_of({"--host", "a", "p"});
  EXPECT_THAT(host, HasSubstr("--hosts"));
  EXPECT_THAT(host, HasSubstr("--hostfile"));
}

TEST(Cli, ExactNameWinsOverLongerName) {
  const auto spec = spec_of({"-np", "1", "--network-interface", "lo", "p"});
  EXPECT_THAT(spec.network_interfaces, ElementsAre("lo"));
}

TEST(Cli, SingleDashLongSpellings) {
  char path[] = "/tmp/hvdrun_cli_hostsXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "localhost slots=3 max_slots=8\n";
  const auto result = parse({"-hostfile", path, "-prefix-timestamp", "prog"});
  std::remove(path);
  EXPECT_EQ(result.spec.num_proc, 3);
  EXPECT_EQ(result.spec.hosts[0].origin, std::string(path) + ":1");
  EXPECT_TRUE(result.spec.prefix_timestamp);
  EXPECT_THAT(result.notes, ElementsAre(std::string(path) + ":1: max_slots ignored"));
}

TEST(Cli, AttachedShortValues) {
  const auto spec = spec_of({"-Hlocalhost:2", "-xFOO=bar", "-p2200", "prog"});
  EXPECT_EQ(spec.hosts[0].slots, 2);
  EXPECT_THAT(spec.env_forward, ElementsAre(EnvForward{"FOO", "bar"}));
  EXPECT_EQ(spec.ssh_port, 2200);
}

TEST(Cli, DoubleDashEndsOptions) {
  const auto spec = spec_of({"-np", "2", "--", "-weird-prog", "--verbose", "-v"});
  EXPECT_THAT(spec.command, ElementsAre("-weird-prog", "--verbose", "-v"));
  EXPECT_FALSE(spec.verbose);
}

TEST(Cli, CommandKeepsItsOwnDashArguments) {
  const auto result = parse({"-np", "2", "python3", "-c", "x", "-v", "--help", "-np", "9"});
  EXPECT_EQ(result.action, CliAction::kRun);
  EXPECT_EQ(result.spec.num_proc, 2);
  EXPECT_THAT(result.spec.command, ElementsAre("python3", "-c", "x", "-v", "--help", "-np", "9"));
}

TEST(Cli, ExportForms) {
  const Env env{{"FOO", "from-launcher"}, {"BAR", ""}};
  const auto spec = spec_of(
      {"-x", "FOO", "-x", "BAR", "-x", "A=B=C", "-x", "EMPTY=", "-x", "_u9=1", "-np", "1", "p"},
      env);
  EXPECT_THAT(spec.env_forward,
              ElementsAre(EnvForward{"FOO", std::nullopt}, EnvForward{"BAR", std::nullopt},
                          EnvForward{"A", "B=C"}, EnvForward{"EMPTY", ""}, EnvForward{"_u9", "1"}));
}

TEST(Cli, ExportErrorsNameTheVariable) {
  EXPECT_THAT(error_of({"-x", "MISSING", "-np", "1", "p"}),
              HasSubstr("-x MISSING: MISSING is not set"));
  EXPECT_THAT(error_of({"-x", "1BAD=2", "-np", "1", "p"}), HasSubstr("'1BAD'"));
  EXPECT_THAT(error_of({"-x", "A.B=1", "-np", "1", "p"}), HasSubstr("'A.B'"));
  EXPECT_THAT(error_of({"-x", "=1", "-np", "1", "p"}), HasSubstr("-x '=1'"));
}

TEST(Cli, NumProcDefaultsToTheSlotsOfTheHosts) {
  const auto spec = spec_of({"-H", "localhost:2,127.0.0.1:3", "p"});
  EXPECT_EQ(spec.num_proc, 5);
  ASSERT_EQ(spec.hosts.size(), 2u);
  EXPECT_EQ(spec.hosts[1], (HostSpec{"", "127.0.0.1", 3, "-H"}));
  EXPECT_EQ(spec_of({"-np", "3", "-H", "localhost:2,127.0.0.1:3", "p"}).num_proc, 3);
}

TEST(Cli, TooFewSlotsNamesTheCounts) {
  EXPECT_EQ(error_of({"-np", "8", "-H", "a:2,b:2", "p"}),
            "-np 8 but the hosts give only 4 slots (a:2, b:2)");
}

TEST(Cli, HostsAndHostfileAreExclusive) {
  const auto message = error_of({"-H", "a", "--hostfile", "f", "p"});
  EXPECT_THAT(message, HasSubstr("-H"));
  EXPECT_THAT(message, HasSubstr("--hostfile"));
}

TEST(Cli, BadProcessCounts) {
  for (const auto* value : {"0", "-1", "abc", "1.5", "2x", "99999999999", "2000000"}) {
    const auto message = error_of({"-np", value, "p"});
    EXPECT_THAT(message, HasSubstr("-np")) << value;
    EXPECT_THAT(message, HasSubstr(value)) << message;
  }
  EXPECT_THAT(error_of({"-np", "0", "p"}), HasSubstr("at least 1"));
  EXPECT_THAT(error_of({"-np", "99999999999", "p"}), HasSubstr("too large"));
  EXPECT_THAT(error_of({"--num-proc=-3", "p"}), HasSubstr("--num-proc -3"));
}

TEST(Cli, NumProcRequiredWithoutHosts) {
  EXPECT_THAT(error_of({"prog"}), HasSubstr("-np is required"));
}

TEST(Cli, MissingProgram) {
  EXPECT_EQ(error_of({"-np", "2"}),
            "no program given: usage: hvdrun -np N [options] program [args...]");
  EXPECT_EQ(error_of({"-np", "2", "--"}),
            "no program given: usage: hvdrun -np N [options] program [args...]");
}

TEST(Cli, UnknownOptions) {
  EXPECT_EQ(error_of({"--foo", "-np", "1", "p"}),
            "unrecognised option '--foo' (see hvdrun --help)");
  EXPECT_EQ(error_of({"--foo=3", "p"}), "unrecognised option '--foo' (see hvdrun --help)");
  EXPECT_EQ(error_of({"-foo", "p"}), "unrecognised option '-foo' (see hvdrun --help)");
  EXPECT_THAT(error_of({"-n", "2", "p"}), HasSubstr("'-n'"));
}

TEST(Cli, OptionValueProblems) {
  EXPECT_THAT(error_of({"-np"}), HasSubstr("option -np needs a value"));
  EXPECT_THAT(error_of({"-np", "--verbose", "p"}),
              HasSubstr("-np needs a value, got option '--verbose'"));
  EXPECT_THAT(error_of({"--verbose=1", "-np", "1", "p"}), HasSubstr("--verbose takes no value"));
  EXPECT_THAT(error_of({"-H", "", "p"}), HasSubstr("-H needs a non-empty value"));
  const auto twice = error_of({"-np", "2", "--num-proc", "3", "p"});
  EXPECT_THAT(twice, HasSubstr("given twice"));
  EXPECT_THAT(twice, HasSubstr("'2'"));
  EXPECT_THAT(twice, HasSubstr("'3'"));
}

// horovodrun's second names of --min-np and --max-np; a prefix common to both names of one
// option is not ambiguous.
TEST(Cli, MinNumProcAndMaxNumProcAreMinNpAndMaxNp) {
  const auto spec = spec_of({"-np", "3", "--min-num-proc", "2", "--max-num-proc", "5", "p"});
  EXPECT_EQ(spec.elastic.min_np, 2);
  EXPECT_EQ(spec.elastic.max_np, 5);
  const auto prefixed = spec_of({"-np", "3", "--min-n", "2", "--max-n", "4", "p"});
  EXPECT_EQ(prefixed.elastic.min_np, 2);
  EXPECT_EQ(prefixed.elastic.max_np, 4);
  EXPECT_THAT(error_of({"-np", "3", "--min-np", "2", "--min-num-proc", "1", "p"}),
              HasSubstr("given twice"));
  EXPECT_THAT(hvdrun::launcher::help_text(), HasSubstr("--min-np, --min-num-proc N"));
}

// HOROVOD_ELASTIC_TIMEOUT counts in elastic jobs only, as in horovodrun: a static job runs
// whatever it says.
TEST(Cli, ElasticTimeoutFromTheEnvironmentInElasticJobsOnly) {
  EXPECT_EQ(spec_of({"-np", "2", "--min-np", "1", "p"}, {{"HOROVOD_ELASTIC_TIMEOUT", "45"}})
                .elastic.timeout,
            std::chrono::seconds(45));
  EXPECT_THAT(error_of({"-np", "2", "--min-np", "1", "p"}, {{"HOROVOD_ELASTIC_TIMEOUT", "abc"}}),
              HasSubstr("HOROVOD_ELASTIC_TIMEOUT 'abc'"));
  EXPECT_FALSE(spec_of({"-np", "1", "p"}, {{"HOROVOD_ELASTIC_TIMEOUT", "abc"}}).elastic_job());
}

TEST(Cli, RepeatedFlagsAreHarmless) {
  EXPECT_TRUE(spec_of({"--verbose", "--verbose", "-np", "1", "p"}).verbose);
}

TEST(Cli, StartTimeoutFromFlagOrEnvironment) {
  EXPECT_EQ(spec_of({"-np", "1", "p"}, {{"HOROVOD_START_TIMEOUT", "45"}}).start_timeout,
            std::chrono::seconds(45));
  EXPECT_EQ(spec_of({"--start-timeout", "12", "-np", "1", "p"}, {{"HOROVOD_START_TIMEOUT", "45"}})
                .start_timeout,
            std::chrono::seconds(12));
  EXPECT_THAT(error_of({"-np", "1", "p"}, {{"HOROVOD_START_TIMEOUT", "soon"}}),
              HasSubstr("HOROVOD_START_TIMEOUT 'soon'"));
  EXPECT_THAT(error_of({"--start-timeout", "0", "-np", "1", "p"}), HasSubstr("--start-timeout 0"));
  EXPECT_THAT(error_of({"--start-timeout", "1e9", "-np", "1", "p"}),
              HasSubstr("--start-timeout '1e9'"));
}

TEST(Cli, GracePeriod) {
  EXPECT_EQ(spec_of({"--grace-period", "0.25", "-np", "1", "p"}).grace_period,
            std::chrono::milliseconds(250));
  EXPECT_EQ(spec_of({"--grace-period", "10", "-np", "1", "p"}).grace_period,
            std::chrono::milliseconds(10000));
  EXPECT_THAT(error_of({"--grace-period", "-1", "-np", "1", "p"}), HasSubstr("--grace-period -1"));
  EXPECT_THAT(error_of({"--grace-period", "soon", "-np", "1", "p"}),
              HasSubstr("--grace-period 'soon'"));
  EXPECT_THAT(error_of({"--grace-period", "inf", "-np", "1", "p"}), HasSubstr("'inf'"));
}

TEST(Cli, LogLevels) {
  const std::map<std::string, std::string> expected = {
      {"TRACE", "trace"}, {"DEBUG", "debug"},    {"INFO", "info"}, {"WARNING", "warn"},
      {"ERROR", "error"}, {"FATAL", "critical"}, {"warn", "warn"}, {"critical", "critical"},
      {"off", "off"},     {"Info", "info"}};
  for (const auto& [given, stored] : expected) {
    EXPECT_EQ(spec_of({"--log-level", given, "-np", "1", "p"}).log_level, stored) << given;
  }
  EXPECT_EQ(spec_of({"-np", "1", "p"}, {{"HVDRUN_LOG_LEVEL", "DEBUG"}}).log_level, "debug");
  EXPECT_EQ(
      spec_of({"--log-level", "error", "-np", "1", "p"}, {{"HVDRUN_LOG_LEVEL", "DEBUG"}}).log_level,
      "error");
  EXPECT_THAT(error_of({"--log-level", "loud", "-np", "1", "p"}), HasSubstr("--log-level 'loud'"));
  EXPECT_THAT(error_of({"-np", "1", "p"}, {{"HVDRUN_LOG_LEVEL", "loud"}}),
              HasSubstr("HVDRUN_LOG_LEVEL 'loud'"));
}

TEST(Cli, NetworkInterfacesMergeWithoutDuplicates) {
  const auto spec = spec_of({"--network-interface", "eth0", "--network-interface", "eth1,eth0",
                             "--network-interfaces", " ib0 , eth1", "-np", "1", "p"});
  EXPECT_THAT(spec.network_interfaces, ElementsAre("eth0", "eth1", "ib0"));
  EXPECT_THAT(error_of({"--network-interfaces", ",", "-np", "1", "p"}),
              HasSubstr("--network-interfaces ','"));
}

TEST(Cli, SshPortRange) {
  EXPECT_THAT(error_of({"-p", "0", "-np", "1", "p"}), HasSubstr("-p 0"));
  EXPECT_THAT(error_of({"--ssh-port", "70000", "-np", "1", "p"}), HasSubstr("--ssh-port 70000"));
}

TEST(Cli, SshHostKeyCheckRendezvousAddrAndRemoteHvdrun) {
  const auto defaults = spec_of({"-np", "1", "p"});
  EXPECT_EQ(defaults.ssh_host_key_check, "accept-new");
  EXPECT_EQ(defaults.rendezvous_addr, "");
  EXPECT_EQ(defaults.remote_hvdrun, "");
  for (const auto* policy : {"yes", "accept-new", "no"}) {
    EXPECT_EQ(spec_of({"--ssh-host-key-check", policy, "-np", "1", "p"}).ssh_host_key_check,
              policy);
  }
  EXPECT_THAT(error_of({"--ssh-host-key-check", "maybe", "-np", "1", "p"}),
              HasSubstr("--ssh-host-key-check 'maybe': expected yes"));
  const auto spec = spec_of({"--rendezvous-addr", "[fd00::1]", "--remote-hvdrun",
                             "/opt/hvdrun/bin/hvdrun", "-np", "1", "p"});
  EXPECT_EQ(spec.rendezvous_addr, "fd00::1");
  EXPECT_EQ(spec.remote_hvdrun, "/opt/hvdrun/bin/hvdrun");
  EXPECT_EQ(spec_of({"--rendezvous-addr=10.0.0.1", "-np", "1", "p"}).rendezvous_addr, "10.0.0.1");
  EXPECT_THAT(error_of({"--rendezvous-addr", "10.0.0.1 x", "-np", "1", "p"}),
              HasSubstr("--rendezvous-addr '10.0.0.1 x'"));
}

TEST(Cli, HostErrorsComeThrough) {
  EXPECT_THAT(error_of({"-H", "a:x", "p"}), HasSubstr("bad slot count 'x'"));
  EXPECT_THAT(error_of({"--hostfile", "/nonexistent/hvdrun-hosts", "p"}),
              HasSubstr("cannot read host file '/nonexistent/hvdrun-hosts'"));
}

TEST(Cli, HelpListsEveryFlagWithDefaults) {
  for (const auto* flag : {"-h", "--help", "--he"}) {
    const auto result = parse({flag});
    EXPECT_EQ(result.action, CliAction::kHelp) << flag;
  }
  const auto text = parse({"--help"}).text;
  for (const auto* spelling :
       {"-np, --num-proc N", "-H, --hosts LIST", "-hostfile, --hostfile FILE", "--start-timeout S",
        "--grace-period S", "--output-filename DIR",
        "-prefix-timestamp, --prefix-output-with-timestamp", "--verbose", "--log-level L",
        "--network-interface X", "--network-interfaces A,B", "-x NAME[=VALUE]", "-p, --ssh-port P",
        "-i, --ssh-identity-file FILE", "--ssh-host-key-check yes|accept-new|no",
        "--rendezvous-addr ADDR", "--remote-hvdrun PATH", "-v, --version", "-h, --help"}) {
    EXPECT_THAT(text, HasSubstr(spelling));
  }
  EXPECT_THAT(text, HasSubstr("(default: $HOROVOD_START_TIMEOUT, else 30)"));
  EXPECT_THAT(text, HasSubstr("(default: 5)"));
  EXPECT_THAT(text, HasSubstr("(default: $HVDRUN_LOG_LEVEL, else warn)"));
  EXPECT_THAT(text, HasSubstr("usage: hvdrun -np N [options] program [args...]"));
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "help text must end with a newline";
    EXPECT_LE(end - start, 100u) << text.substr(start, end - start);
    start = end + 1;
  }
}

TEST(Cli, Version) {
  for (const auto* flag : {"-v", "--version"}) {
    const auto result = parse({flag});
    EXPECT_EQ(result.action, CliAction::kVersion);
    EXPECT_THAT(result.text, ::testing::MatchesRegex("hvdrun [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  }
}

}  // namespace
}  // namespace hvdrun::launcher

namespace hvdrun::launcher {
namespace {

// Inside a Slurm allocation without -H or --hostfile, the allocation's nodes are the hosts and
// its tasks the default -np; -H still wins.
TEST(CliSlurm, TheAllocationGivesHostsAndNp) {
  const Env slurm{{"SLURM_JOB_ID", "9"},
                  {"SLURM_JOB_NODELIST", "hvds-n[1-2]"},
                  {"SLURM_TASKS_PER_NODE", "2,1"}};
  const auto r = parse({"./train"}, slurm);
  EXPECT_EQ(r.spec.num_proc, 3);
  ASSERT_EQ(r.spec.hosts.size(), 2u);
  EXPECT_EQ(r.spec.hosts[1].name, "hvds-n2");
  EXPECT_EQ(r.spec.hosts[1].slots, 1);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.notes.back(),
            "hosts from Slurm job 9: hvds-n[1-2] (2 hosts, 3 slots); give -H or --hostfile for "
            "others");
  const auto given = parse({"-np", "2", "-H", "localhost:2", "./train"}, slurm);
  ASSERT_EQ(given.spec.hosts.size(), 1u);
  EXPECT_EQ(given.spec.hosts[0].name, "localhost");
}

}  // namespace
}  // namespace hvdrun::launcher
