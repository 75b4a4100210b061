// parse_cli: the flags of hang forensics, signals, output filters and the timeline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "launcher/cli/cli.h"
#include "tests/launcher/cli/cli_test_util.h"

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Cli, ForwardSignals) {
  EXPECT_THAT(spec_of({"--forward-signals", "usr1,SIGUSR2", "-np", "1", "p"}).forward_signals,
              ElementsAre(SIGUSR1, SIGUSR2));
  EXPECT_THAT(spec_of({"--forward-signals", "QUIT,INT", "-np", "1", "p"}).forward_signals,
              ElementsAre(SIGQUIT, SIGINT));
  EXPECT_TRUE(spec_of({"--forward-signals", "none", "-np", "1", "p"}).forward_signals.empty());
  EXPECT_EQ(error_of({"--forward-signals", "USR1,TERM", "-np", "1", "p"}),
            "--forward-signals 'USR1,TERM': 'TERM' is not one of HUP, INT, QUIT, USR1, USR2 "
            "(or none)");
  EXPECT_THAT(error_of({"--forward-signals", "USR1,usr1", "-np", "1", "p"}),
              HasSubstr("'usr1' given twice"));
  EXPECT_THAT(error_of({"--forward-signals", "USR1,", "-np", "1", "p"}),
              HasSubstr("'' is not one of"));
}

TEST(Cli, OutputPrefixAndRanksFilter) {
  EXPECT_EQ(spec_of({"-np", "1", "p"}).output_prefix, OutputPrefix::kRank);
  EXPECT_EQ(spec_of({"--line-prefix", "host-rank", "-np", "1", "p"}).output_prefix,
            OutputPrefix::kHostRank);
  EXPECT_EQ(spec_of({"--line-prefix", "none", "-np", "1", "p"}).output_prefix, OutputPrefix::kNone);
  EXPECT_EQ(error_of({"--line-prefix", "host", "-np", "1", "p"}),
            "--line-prefix 'host': expected rank, host-rank or none");
  EXPECT_THAT(spec_of({"--ranks-filter", "0,3-5,9", "-np", "10", "p"}).ranks_filter,
              ElementsAre(RankRange{0, 0}, RankRange{3, 5}, RankRange{9, 9}));
  EXPECT_TRUE(spec_of({"-np", "1", "p"}).ranks_filter.empty());
  EXPECT_EQ(error_of({"--ranks-filter", "0,5-3", "-np", "1", "p"}),
            "--ranks-filter '0,5-3': '5-3' ends below its start");
  for (const char* bad : {"x", "1,", "-1", "2-", "1-2-3", "9999999"}) {
    EXPECT_THAT(error_of({"--ranks-filter", bad, "-np", "1", "p"}),
                HasSubstr("is not a rank or a range of ranks (0..1000000)"))
        << bad;
  }
}

TEST(Cli, TimelineCollectives) {
  const auto off = spec_of({"--timeline", "t.json", "-np", "1", "p"});
  EXPECT_FALSE(off.timeline_collectives);
  EXPECT_EQ(off.timeline_rank_events, 10'000u);
  const auto on = spec_of({"--timeline", "t.json", "--timeline-collectives",
                           "--timeline-rank-events", "500", "-np", "1", "p"});
  EXPECT_TRUE(on.timeline_collectives);
  EXPECT_EQ(on.timeline_rank_events, 500u);
  EXPECT_EQ(error_of({"--timeline-collectives", "-np", "1", "p"}),
            "--timeline-collectives draws into the timeline: give --timeline FILE too");
  EXPECT_EQ(error_of({"--timeline-rank-events", "5", "-np", "1", "p"}),
            "--timeline-rank-events draws into the timeline: give --timeline FILE too");
  EXPECT_THAT(error_of({"--timeline", "t", "--timeline-rank-events", "0", "-np", "1", "p"}),
              HasSubstr("--timeline-rank-events"));
}

TEST(Cli, ExcludeStragglers) {
  const auto plain = spec_of({"-np", "2", "--min-np", "1", "p"});
  EXPECT_FALSE(plain.elastic.exclude_stragglers);
  EXPECT_EQ(plain.elastic.straggler_margin, std::chrono::milliseconds(50));
  const auto on = spec_of(
      {"-np", "2", "--min-np", "1", "--exclude-stragglers", "--straggler-margin", "20", "p"});
  EXPECT_TRUE(on.elastic.exclude_stragglers);
  EXPECT_EQ(on.elastic.straggler_margin, std::chrono::milliseconds(20));
  EXPECT_THAT(error_of({"-np", "2", "--exclude-stragglers", "p"}),
              HasSubstr("--exclude-stragglers acts in elastic jobs only"));
  EXPECT_THAT(error_of({"-np", "2", "--straggler-margin", "5", "p"}),
              HasSubstr("--straggler-margin acts in elastic jobs only"));
  EXPECT_THAT(
      error_of({"-np", "2", "--min-np", "1", "--max-restarts", "2", "--exclude-stragglers", "p"}),
      HasSubstr("--exclude-stragglers and --max-restarts cannot be used together"));
}

TEST(Cli, Spares) {
  EXPECT_EQ(spec_of({"-np", "2", "--min-np", "1", "p"}).elastic.spares, 0);
  EXPECT_EQ(
      spec_of({"-np", "2", "--min-np", "2", "--max-np", "2", "--spares", "3", "p"}).elastic.spares,
      3);
  EXPECT_THAT(error_of({"-np", "2", "--spares", "1", "p"}),
              HasSubstr("--spares acts in elastic jobs only"));
  EXPECT_THAT(error_of({"-np", "2", "--min-np", "1", "--max-restarts", "1", "--spares", "1", "p"}),
              HasSubstr("--spares and --max-restarts cannot be used together"));
  EXPECT_THAT(error_of({"-np", "2", "--min-np", "1", "--spares", "-1", "p"}),
              HasSubstr("--spares"));
  EXPECT_THAT(error_of({"-np", "2", "--min-np", "1", "--spares", "5000", "p"}),
              HasSubstr("--spares"));
}

TEST(Cli, Preflight) {
  const auto off = spec_of({"-np", "2", "p"});
  EXPECT_FALSE(off.preflight.run);
  const auto on = spec_of({"-np", "2", "--preflight", "--preflight-timeout", "15",
                           "--preflight-slack", "35", "--preflight-exclude", "p"});
  EXPECT_TRUE(on.preflight.run);
  EXPECT_FALSE(on.preflight.only);
  EXPECT_TRUE(on.preflight.exclude);
  EXPECT_EQ(on.preflight.timeout, std::chrono::seconds(15));
  EXPECT_DOUBLE_EQ(on.preflight.slack, 0.35);
  const auto only = spec_of({"-np", "2", "--preflight-only", "p"});
  EXPECT_TRUE(only.preflight.run);
  EXPECT_TRUE(only.preflight.only);
  EXPECT_THAT(error_of({"-np", "2", "--preflight-slack", "10", "p"}),
              HasSubstr("--preflight-slack needs --preflight or --preflight-only"));
  EXPECT_THAT(error_of({"-np", "2", "--preflight", "--preflight-slack", "100", "p"}),
              HasSubstr("--preflight-slack"));
  EXPECT_THAT(error_of({"-np", "2", "--preflight", "--preflight-timeout", "0", "p"}),
              HasSubstr("--preflight-timeout"));
}

TEST(Cli, PreflightIsRefusedWhereItsHostsWouldNotBeTheJobs) {
  // A discovery script's first hosts are checked; those that fail start in cooldown.
  EXPECT_TRUE(
      spec_of({"-np", "2", "--preflight", "--host-discovery-script", "./d.sh", "p"}).preflight.run);
  const auto secret = std::filesystem::temp_directory_path() / "hvdrun-cli-test-secret";
  std::ofstream(secret) << "0123456789abcdef0123456789abcdef\n";
  const auto per_node = [&](std::vector<std::string> flags) {
    const std::vector<std::string> rest = {"--nnodes",
                                           "2",
                                           "--node-rank",
                                           "0",
                                           "--nproc-per-node",
                                           "1",
                                           "--rdzv-endpoint",
                                           "h:29400",
                                           "--rdzv-secret-file",
                                           secret.string(),
                                           "p"};
    flags.insert(flags.end(), rest.begin(), rest.end());
    return flags;
  };
  // Every node of a per-node start is checked, and one that fails fails the job.
  EXPECT_TRUE(spec_of(per_node({"--preflight-only"})).preflight.only);
  EXPECT_THAT(error_of(per_node({"--preflight", "--preflight-exclude"})),
              HasSubstr("--preflight-exclude and --nnodes cannot be used together"));
  EXPECT_THAT(error_of(per_node({"--preflight", "--min-np", "1"})),
              HasSubstr("--min-np and --nnodes cannot be used together"));
  std::filesystem::remove(secret);
}

}  // namespace
}  // namespace hvdrun::launcher
