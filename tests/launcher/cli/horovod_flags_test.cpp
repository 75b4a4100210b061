// horovodrun's tuning flags and --config-file -> JobSpec::tuning_env, the MPI-only flags
// refused, the accepted no-op flags, and --check-build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "hvdrun/error.h"
#include "launcher/cli/cli.h"
#include "launcher/cli/horovod_check.h"
#include "tests/launcher/cli/cli_test_util.h"

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

Env tuning_of(std::vector<std::string> args, const Env& env = {}) {
  args.insert(args.begin(), {"-np", "1"});
  args.push_back("prog");
  auto result = parse_cli(std::span<const std::string>(args), env);
  EXPECT_EQ(result.action, CliAction::kRun);
  return result.spec.tuning_env;
}

// The one-line UsageError of a job of `args` (-np 1 before them, a program after).
std::string job_error_of(std::vector<std::string> args) {
  args.insert(args.begin(), {"-np", "1"});
  args.push_back("prog");
  return error_of(std::move(args));
}

// A YAML file for the duration of a test.
struct ConfigFileOnDisk {
  explicit ConfigFileOnDisk(const std::string& text) {
    char name[] = "/tmp/hvdrun_config_XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~ConfigFileOnDisk() { std::remove(path.c_str()); }
  std::string path;
};

// `a0: &a0 LEAF`, then each `aN` merging eight copies of `aN-1`, and `params` merging the last.
std::string merge_bomb(const std::string& leaf, int depth) {
  std::string text = "a0: &a0 " + leaf + "\n";
  for (int i = 1; i < depth; ++i) {
    const std::string previous = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " {<<: [";
    for (int copy = 0; copy < 8; ++copy) text += (copy > 0 ? ", " : "") + previous;
    text += "]}\n";
  }
  return text + "params:\n  <<: *a" + std::to_string(depth - 1) + "\n";
}

TEST(HorovodFlags, UnsetFlagsWriteNothing) {
  EXPECT_THAT(tuning_of({}), IsEmpty());
}

TEST(HorovodFlags, EveryTuningFlagBecomesItsVariable) {
  const auto env = tuning_of({"--fusion-threshold-mb",
                              "32",
                              "--cycle-time-ms",
                              "2.5",
                              "--cache-capacity",
                              "0",
                              "--hierarchical-allreduce",
                              "--no-hierarchical-allgather",
                              "--torus-allreduce",
                              "--timeline-filename",
                              "t.json",
                              "--timeline-mark-cycles",
                              "--no-stall-check",
                              "--stall-check-warning-time-seconds",
                              "90",
                              "--stall-check-shutdown-time-seconds",
                              "300",
                              "--mpi-threads-disable",
                              "--num-nccl-streams",
                              "2",
                              "--thread-affinity",
                              "3",
                              "--gloo-timeout-seconds",
                              "120",
                              "--log-without-timestamp",
                              "--log-level",
                              "DEBUG"});
  EXPECT_EQ(env, (Env{{"HOROVOD_FUSION_THRESHOLD", "33554432"},
                      {"HOROVOD_CYCLE_TIME", "2.5"},
                      {"HOROVOD_CACHE_CAPACITY", "0"},
                      {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
                      {"HOROVOD_HIERARCHICAL_ALLGATHER", "0"},
                      {"HOROVOD_TORUS_ALLREDUCE", "1"},
                      {"HOROVOD_TIMELINE", "t.json"},
                      {"HOROVOD_TIMELINE_MARK_CYCLES", "1"},
                      {"HOROVOD_STALL_CHECK_DISABLE", "1"},
                      {"HOROVOD_STALL_CHECK_TIME_SECONDS", "90"},
                      {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "300"},
                      {"HOROVOD_MPI_THREADS_DISABLE", "1"},
                      {"HOROVOD_NUM_NCCL_STREAMS", "2"},
                      {"HOROVOD_THREAD_AFFINITY", "3"},
                      {"HOROVOD_GLOO_TIMEOUT_SECONDS", "120"},
                      {"HOROVOD_LOG_HIDE_TIME", "1"},
                      {"HOROVOD_LOG_LEVEL", "DEBUG"}}));
}

TEST(HorovodFlags, AutotuneCompanionsOnlyWithAutotune) {
  const std::vector<std::string> companions = {"--autotune-log-file",
                                               "a.csv",
                                               "--autotune-warmup-samples",
                                               "5",
                                               "--autotune-steps-per-sample",
                                               "20",
                                               "--autotune-bayes-opt-max-samples",
                                               "30",
                                               "--autotune-gaussian-process-noise",
                                               "0.5"};
  EXPECT_THAT(tuning_of(companions), IsEmpty());
  auto with = companions;
  with.push_back("--autotune");
  EXPECT_EQ(tuning_of(with), (Env{{"HOROVOD_AUTOTUNE", "1"},
                                  {"HOROVOD_AUTOTUNE_LOG", "a.csv"},
                                  {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "5"},
                                  {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "20"},
                                  {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "30"},
                                  {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.5"}}));
  EXPECT_THAT(tuning_of({"--no-autotune"}), IsEmpty());
}

TEST(HorovodFlags, TimelineMarkCyclesOnlyWithATimeline) {
  EXPECT_THAT(tuning_of({"--timeline-mark-cycles"}), IsEmpty());
}

TEST(HorovodFlags, BadValuesNameTheFlag) {
  EXPECT_THAT(job_error_of({"--fusion-threshold-mb", "-1"}),
              HasSubstr("--fusion-threshold-mb '-1': expected a whole number >= 0"));
  EXPECT_THAT(job_error_of({"--fusion-threshold-mb", "1.5"}),
              HasSubstr("--fusion-threshold-mb '1.5'"));
  EXPECT_THAT(job_error_of({"--cycle-time-ms", "soon"}), HasSubstr("--cycle-time-ms 'soon'"));
  EXPECT_THAT(job_error_of({"--autotune", "--autotune-gaussian-process-noise", "1.5"}),
              HasSubstr("between 0 and 1"));
  EXPECT_THAT(job_error_of({"--hierarchical-allreduce", "--no-hierarchical-allreduce"}),
              HasSubstr("cannot be used together"));
}

TEST(HorovodFlags, PrefixesFollowArgparse) {
  EXPECT_THAT(tuning_of({"--fusion", "8"}),
              ElementsAre(Pair("HOROVOD_FUSION_THRESHOLD", "8388608")));
  EXPECT_THAT(job_error_of({"--hier"}), HasSubstr("ambiguous option '--hier'"));
}

TEST(HorovodFlags, MpiOnlyFlagsAreRefusedWithTheReason) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--mpi"},
                                               {"--jsrun"},
                                               {"--mpi-args", "-x A"},
                                               {"-b", "--bind-to none"},
                                               {"--binding-args", "x"}}) {
    const auto message = job_error_of(args);
    EXPECT_THAT(message, HasSubstr(args[0])) << message;
    EXPECT_THAT(message, HasSubstr("hvdrun runs Horovod in Gloo mode")) << message;
  }
}

// --tcp is not MPI-only: horovodrun keeps NCCL off InfiniBand with it in every mode.
TEST(HorovodFlags, TcpDisablesNcclInfiniBand) {
  EXPECT_THAT(tuning_of({"--tcp"}), ElementsAre(Pair("NCCL_IB_DISABLE", "1")));
}

// Every switch writing the same variable conflicts with the ones writing the other value.
TEST(HorovodFlags, OppositeSwitchesOfOneVariableConflict) {
  EXPECT_THAT(job_error_of({"--log-hide-timestamp", "--no-log-hide-timestamp"}),
              HasSubstr("cannot be used together"));
  EXPECT_THAT(job_error_of({"--log-without-timestamp", "--no-log-hide-timestamp"}),
              HasSubstr("cannot be used together"));
  EXPECT_THAT(tuning_of({"--log-without-timestamp", "--log-hide-timestamp"}),
              ElementsAre(Pair("HOROVOD_LOG_HIDE_TIME", "1")));
}

// --log-level is also hvdrun's own level, so an -x of Horovod's level is not a conflict.
TEST(HorovodFlags, ExportOfHorovodsLogLevelWinsOverLogLevel) {
  EXPECT_THAT(tuning_of({"--log-level", "error", "-x", "HOROVOD_LOG_LEVEL=TRACE"}), IsEmpty());
}

TEST(HorovodFlags, GlooAndDisableCacheAreAccepted) {
  EXPECT_THAT(tuning_of({"--gloo", "--disable-cache"}), IsEmpty());
}

// Horovod's lines are Horovod's answer: with no Horovod that python3 imports (none on this
// PATH without PYTHONPATH), every box is empty, as under horovodrun; hvdrun's own lines follow.
TEST(HorovodFlags, CheckBuildNeedsNoProgram) {
  for (const char* flag : {"-cb", "--check-build"}) {
    const std::vector<std::string> args = {flag};
    const auto result = parse_cli(std::span<const std::string>(args), {{"PATH", "/usr/bin:/bin"}});
    EXPECT_EQ(result.action, CliAction::kCheckBuild);
    EXPECT_THAT(result.text, HasSubstr("Horovod: not found (python3 cannot import horovod: "));
    EXPECT_THAT(result.text, HasSubstr("Available Controllers:\n    [ ] MPI\n    [ ] Gloo\n"));
    EXPECT_THAT(result.text, HasSubstr("Available Tensor Operations:\n    [ ] NCCL\n"));
    EXPECT_THAT(result.text, HasSubstr("\nhvdrun v"));
    EXPECT_THAT(result.text,
                HasSubstr("libhvdrun programs (C++): a TCP ring on CPUs; NCCL on GPUs: "));
    EXPECT_THAT(result.text, HasSubstr("GPUs visible: "));
  }
}

TEST(HorovodFlags, CheckBuildReadsEachFrameworksProbe) {
  const HorovodProbe torch = parse_horovod_probe("version 0.28.1\nops 0 1 1 0 0\n");
  EXPECT_TRUE(torch.loaded);
  EXPECT_EQ(torch.version, "0.28.1");
  EXPECT_TRUE(torch.gloo && torch.nccl && !torch.mpi);
  const HorovodProbe tf =
      parse_horovod_probe("missing ModuleNotFoundError No module named 'tensorflow'\n");
  EXPECT_FALSE(tf.loaded);
  EXPECT_EQ(tf.why, "ModuleNotFoundError No module named 'tensorflow'");
  EXPECT_EQ(parse_horovod_probe("").why, "no answer from python3");
  const HorovodProbe probes[3] = {tf, torch, tf};
  EXPECT_EQ(horovod_build_lines(probes),
            "Horovod v0.28.1:\n\n"
            "Available Frameworks:\n    [ ] TensorFlow\n    [X] PyTorch\n    [ ] MXNet\n\n"
            "Available Controllers:\n    [ ] MPI\n    [X] Gloo\n\n"
            "Available Tensor Operations:\n    [X] NCCL\n    [ ] DDL\n    [ ] CCL\n    [ ] MPI\n"
            "    [X] Gloo\n");
}

TEST(HorovodFlags, ConfigFileSetsTheSameVariables) {
  const ConfigFileOnDisk file(
      "controller: gloo\n"
      "params:\n  fusion_threshold_mb: 16\n  cycle_time_ms: 3\n  cache_capacity: 512\n"
      "  hierarchical_allreduce: false\n  hierarchical_allgather: true\n"
      "autotune:\n  enabled: true\n  log_file: tune.csv\n  warmup_samples: 2\n"
      "timeline:\n  filename: tl.json\n  mark_cycles: true\n"
      "stall_check:\n  enabled: false\n  warning_time_seconds: 30\n"
      "library_options:\n  gloo_timeout_seconds: 45\n  num_nccl_streams: 1\n"
      "logging:\n  level: INFO\n  with_timestamp: false\n");
  const std::vector<std::string> args = {"--config-file", file.path, "-np", "1", "prog"};
  const auto result = parse_cli(std::span<const std::string>(args), {});
  EXPECT_THAT(result.notes, IsEmpty());
  EXPECT_EQ(result.spec.log_level, "info");
  EXPECT_EQ(result.spec.tuning_env, (Env{{"HOROVOD_FUSION_THRESHOLD", "16777216"},
                                         {"HOROVOD_CYCLE_TIME", "3"},
                                         {"HOROVOD_CACHE_CAPACITY", "512"},
                                         {"HOROVOD_HIERARCHICAL_ALLREDUCE", "0"},
                                         {"HOROVOD_HIERARCHICAL_ALLGATHER", "1"},
                                         {"HOROVOD_AUTOTUNE", "1"},
                                         {"HOROVOD_AUTOTUNE_LOG", "tune.csv"},
                                         {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "2"},
                                         {"HOROVOD_TIMELINE", "tl.json"},
                                         {"HOROVOD_TIMELINE_MARK_CYCLES", "1"},
                                         {"HOROVOD_STALL_CHECK_DISABLE", "1"},
                                         {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"},
                                         {"HOROVOD_GLOO_TIMEOUT_SECONDS", "45"},
                                         {"HOROVOD_NUM_NCCL_STREAMS", "1"},
                                         {"HOROVOD_LOG_HIDE_TIME", "1"},
                                         {"HOROVOD_LOG_LEVEL", "INFO"}}));
}

// Flags win over the file wherever they stand; -x wins over the file, not over a flag.
TEST(HorovodFlags, FlagsAndExportsOverTheFile) {
  const ConfigFileOnDisk file(
      "params:\n  fusion_threshold_mb: 16\n  cycle_time_ms: 3\n"
      "  hierarchical_allreduce: true\nlogging:\n  level: ERROR\n");
  EXPECT_EQ(tuning_of({"--fusion-threshold-mb", "1", "--config-file", file.path,
                       "--no-hierarchical-allreduce", "-x", "HOROVOD_CYCLE_TIME=9", "--log-level",
                       "trace"}),
            (Env{{"HOROVOD_FUSION_THRESHOLD", "1048576"},
                 {"HOROVOD_HIERARCHICAL_ALLREDUCE", "0"},
                 {"HOROVOD_LOG_LEVEL", "TRACE"}}));
  EXPECT_THAT(job_error_of({"--cycle-time-ms", "2", "-x", "HOROVOD_CYCLE_TIME=9"}),
              HasSubstr("-x HOROVOD_CYCLE_TIME and --cycle-time-ms both set HOROVOD_CYCLE_TIME"));
}

TEST(HorovodFlags, ConfigFileErrorsNameFileAndLine) {
  const ConfigFileOnDisk mpi("params:\n  cycle_time_ms: 1\ncontroller: mpi\n");
  EXPECT_THAT(job_error_of({"--config-file", mpi.path}),
              HasSubstr(mpi.path + ":3: controller: mpi: hvdrun runs Horovod in Gloo mode"));
  const ConfigFileOnDisk bad_value("params:\n  fusion_threshold_mb: lots\n");
  EXPECT_THAT(job_error_of({"--config-file", bad_value.path}),
              HasSubstr(bad_value.path + ":2: params.fusion_threshold_mb 'lots'"));
  const ConfigFileOnDisk bad_bool("timeline:\n  filename: x\n  mark_cycles: maybe\n");
  EXPECT_THAT(
      job_error_of({"--config-file", bad_bool.path}),
      HasSubstr(bad_bool.path + ":3: timeline.mark_cycles 'maybe': expected true or false"));
  const ConfigFileOnDisk bad_yaml("params: [1, 2\n");
  EXPECT_THAT(job_error_of({"--config-file", bad_yaml.path}), HasSubstr("not valid YAML"));
  EXPECT_THAT(job_error_of({"--config-file", "/nonexistent/hvdrun.yaml"}),
              HasSubstr("cannot read --config-file '/nonexistent/hvdrun.yaml': No such file"));
  EXPECT_THAT(job_error_of({"--config-file", "/tmp"}),
              HasSubstr("cannot read --config-file '/tmp': Is a directory"));
  EXPECT_THAT(job_error_of({"--config-file", "/dev/zero"}),
              HasSubstr("cannot read --config-file '/dev/zero': larger than 64 MiB"));
}

// horovodrun's rules for the controller key: --gloo wins over it; its value in any case; an
// empty section is skipped; a stall_check section without `enabled` means enabled.
TEST(HorovodFlags, ConfigFileControllerAndSectionRules) {
  const ConfigFileOnDisk mpi("controller: mpi\n");
  EXPECT_THAT(tuning_of({"--gloo", "--config-file", mpi.path}), IsEmpty());
  const ConfigFileOnDisk capital("controller: Gloo\nparams:\nlogging:\n");
  EXPECT_THAT(tuning_of({"--config-file", capital.path}), IsEmpty());
  const ConfigFileOnDisk stall("stall_check:\n  warning_time_seconds: 5\n");
  EXPECT_EQ(tuning_of({"--config-file", stall.path}),
            (Env{{"HOROVOD_STALL_CHECK_DISABLE", "0"}, {"HOROVOD_STALL_CHECK_TIME_SECONDS", "5"}}));
  // `enabled:` with no value: horovodrun takes `not None`, the stall check off.
  const ConfigFileOnDisk null_enabled("stall_check:\n  enabled:\n  warning_time_seconds: 5\n");
  EXPECT_EQ(tuning_of({"--config-file", null_enabled.path}),
            (Env{{"HOROVOD_STALL_CHECK_DISABLE", "1"}, {"HOROVOD_STALL_CHECK_TIME_SECONDS", "5"}}));
}

// Switches as horovodrun reads them (Python's truth of PyYAML's value): YAML 1.1 booleans and
// numbers; a quoted string, which horovodrun would take as true whatever it says, is refused.
TEST(HorovodFlags, ConfigFileSwitchesTakeNumbersAndYamlBooleans) {
  const ConfigFileOnDisk file(
      "params:\n  hierarchical_allreduce: 1\n  hierarchical_allgather: off\n"
      "  torus_allreduce: 0.0\nautotune:\n  enabled: 0\n  log_file: x.csv\n"
      "stall_check:\n  enabled: Yes\ntimeline:\n  filename: t.json\n  mark_cycles: 2\n");
  EXPECT_EQ(tuning_of({"--config-file", file.path}), (Env{{"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
                                                          {"HOROVOD_HIERARCHICAL_ALLGATHER", "0"},
                                                          {"HOROVOD_TORUS_ALLREDUCE", "0"},
                                                          {"HOROVOD_STALL_CHECK_DISABLE", "0"},
                                                          {"HOROVOD_TIMELINE", "t.json"},
                                                          {"HOROVOD_TIMELINE_MARK_CYCLES", "1"}}));
  // PyYAML's integers and floats: zero is false whatever its spelling.
  const std::vector<std::pair<std::string, std::string>> numbers = {
      {"1_0", "1"},    {"0_0", "0"},  {"0b0", "0"},  {"0b10", "1"},    {"0x0", "0"},
      {"0xA", "1"},    {"017", "1"},  {"1:00", "1"}, {"-0.0", "0"},    {".5", "1"},
      {"0.0e+5", "0"}, {".inf", "1"}, {".nan", "1"}, {"!!int 0", "0"}, {"!!bool yes", "1"}};
  for (const auto& [value, expected] : numbers) {
    const ConfigFileOnDisk number("params:\n  torus_allreduce: " + value + "\n");
    EXPECT_EQ(tuning_of({"--config-file", number.path}),
              (Env{{"HOROVOD_TORUS_ALLREDUCE", expected}}))
        << value;
  }
  // Strings in PyYAML (0e5 needs a dot and a signed exponent to be a float; strtod's hex
  // floats are not YAML's), which horovodrun would take as true.
  for (const char* value :
       {"\"no\"", "'false'", "n", "[1]", "!!str 0", "0e5", "0x0p0", "0o0", "0:00"}) {
    const ConfigFileOnDisk bad(std::string("params:\n  torus_allreduce: ") + value + "\n");
    EXPECT_THAT(job_error_of({"--config-file", bad.path}),
                HasSubstr(bad.path + ":2: params.torus_allreduce"))
        << value;
  }
}

// YAML merge keys, as PyYAML applies them: the section's own keys win, then the merged
// mappings in order; a key that is not a plain value is named.
TEST(HorovodFlags, ConfigFileMergeKeysApply) {
  const ConfigFileOnDisk file(
      "base: &base\n  cycle_time_ms: 3\n  cache_capacity: 7\n"
      "more: &more\n  cycle_time_ms: 4\n  fusion_threshold_mb: 2\n"
      "params:\n  <<: [*base, *more]\n  cache_capacity: 9\n"
      "stall_check:\n  <<: {enabled: false}\n");
  const std::vector<std::string> args = {"--config-file", file.path, "-np", "1", "prog"};
  const auto result = parse_cli(std::span<const std::string>(args), {});
  EXPECT_EQ(result.spec.tuning_env, (Env{{"HOROVOD_CYCLE_TIME", "3"},
                                         {"HOROVOD_CACHE_CAPACITY", "9"},
                                         {"HOROVOD_FUSION_THRESHOLD", "2097152"},
                                         {"HOROVOD_STALL_CHECK_DISABLE", "1"}}));
  EXPECT_THAT(result.notes, ElementsAre(file.path + ":1: unknown section 'base' ignored",
                                        file.path + ":4: unknown section 'more' ignored"));
  const ConfigFileOnDisk list_key("params:\n  [a, b]: 1\n");
  EXPECT_THAT(job_error_of({"--config-file", list_key.path}),
              HasSubstr(list_key.path + ":2: expected a plain key, not a list or mapping"));
  // Aliases merged eight at a time: 8^depth entries (or, of empty mappings, merges) unless
  // every merge counts toward a bound.
  for (const auto& [leaf, depth] : {std::pair{"{cycle_time_ms: 1}", 30}, std::pair{"{}", 10}}) {
    const ConfigFileOnDisk bomb(merge_bomb(leaf, depth));
    EXPECT_THAT(job_error_of({"--config-file", bomb.path}),
                HasSubstr("merge keys (<<) bring in too many entries"))
        << leaf;
  }
  // Of two << keys the later wins, as in PyYAML.
  const ConfigFileOnDisk two_merges(
      "params: {<<: {torus_allreduce: 1}, <<: {torus_allreduce: 0, cycle_time_ms: 2}}\n");
  EXPECT_EQ(tuning_of({"--config-file", two_merges.path}),
            (Env{{"HOROVOD_TORUS_ALLREDUCE", "0"}, {"HOROVOD_CYCLE_TIME", "2"}}));
  const ConfigFileOnDisk bad_merge("params:\n  <<: 5\n");
  EXPECT_THAT(job_error_of({"--config-file", bad_merge.path}),
              HasSubstr(bad_merge.path + ":2: <<: expected a mapping or a list of mappings"));
}

TEST(HorovodFlags, UnknownConfigKeysAreNotedAndIgnored) {
  const ConfigFileOnDisk file("params:\n  fusion: 3\nextras:\n  a: 1\n");
  const std::vector<std::string> args = {"--config-file", file.path, "-np", "1", "prog"};
  const auto result = parse_cli(std::span<const std::string>(args), {});
  EXPECT_THAT(result.notes, ElementsAre(file.path + ":2: unknown key 'params.fusion' ignored",
                                        file.path + ":3: unknown section 'extras' ignored"));
  EXPECT_THAT(result.spec.tuning_env, IsEmpty());
}

// 200,000 unknown keys give 21 notes, not 200,000.
TEST(HorovodFlags, UnknownConfigKeysAreNamedUpToTwentyThenCounted) {
  std::string text = "params:\n";
  for (int i = 0; i < 200000; ++i) text += "  unknown_" + std::to_string(i) + ": 1\n";
  const ConfigFileOnDisk file(text);
  const std::vector<std::string> args = {"--config-file", file.path, "-np", "1", "prog"};
  const auto result = parse_cli(std::span<const std::string>(args), {});
  ASSERT_EQ(result.notes.size(), 21u);
  EXPECT_EQ(result.notes[19], file.path + ":21: unknown key 'params.unknown_19' ignored");
  EXPECT_EQ(result.notes[20], file.path +
                                  ": 199980 more unknown keys or sections ignored (only the "
                                  "first 20 are named)");
}

}  // namespace
}  // namespace hvdrun::launcher
