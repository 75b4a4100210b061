// Integration: what the user sees of worker output through the real hvdrun binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/hvdrun_runner.h"
#include "tests/support/files.h"

namespace hvdrun::itest {
namespace {

using hvdrun::test::read_file;

TEST(Output, PythonRanksPrintOnePrefixedLineEach) {
  auto r = run_hvdrun({"-np", "4", "python3", "-c", "import os; print(os.environ['RANK'])"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = lines_of(r.out);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"[0]<stdout>:0", "[1]<stdout>:1", "[2]<stdout>:2",
                                             "[3]<stdout>:3"}))
      << r.out;
}

// 8 ranks write 200 lines of 64 KiB and one 1 MiB line at once: every line arrives whole,
// with its own rank's prefix, and none is lost.
TEST(Output, ManyRanksWritingLongLinesAtOnceAreNeverTorn) {
  constexpr int kRanks = 8, kLines = 200;
  constexpr std::size_t kBytes = 64 * 1024, kBig = 1 << 20;
  auto r = run_hvdrun({"-np", std::to_string(kRanks), worker(), "chatty", std::to_string(kLines),
                       std::to_string(kBytes), std::to_string(kBig)});
  ASSERT_EQ(r.status, 0) << r.err.substr(0, 2000);
  std::vector<std::vector<bool>> seen(kRanks, std::vector<bool>(kLines, false));
  std::vector<int> big(kRanks, 0);
  std::size_t count = 0;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    ++count;
    int rank = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "[%d]<stdout>:", &rank), 1) << line.substr(0, 80);
    ASSERT_TRUE(rank >= 0 && rank < kRanks);
    std::string prefix = "[" + std::to_string(rank) + "]<stdout>:" + std::to_string(rank) + ":";
    ASSERT_EQ(line.compare(0, prefix.size(), prefix), 0) << line.substr(0, 80);
    std::string rest = line.substr(prefix.size());
    if (rest.starts_with("big:")) {
      EXPECT_EQ(rest, "big:" + std::string(kBig, 'Z'));
      ++big[rank];
      continue;
    }
    int i = std::stoi(rest);
    ASSERT_TRUE(i >= 0 && i < kLines);
    std::string payload = rest.substr(rest.find(':') + 1);
    EXPECT_EQ(payload, std::string(kBytes, static_cast<char>('a' + (rank + i) % 26)))
        << "rank " << rank << " line " << i << " torn";
    EXPECT_FALSE(seen[rank][i]) << "duplicate line";
    seen[rank][i] = true;
  }
  EXPECT_EQ(count, static_cast<std::size_t>(kRanks * (kLines + 1)));
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(big[rank], 1) << "rank " << rank;
    EXPECT_EQ(std::count(seen[rank].begin(), seen[rank].end(), true), kLines) << "rank " << rank;
    EXPECT_NE(r.err.find("[" + std::to_string(rank) + "]<stderr>:rank " + std::to_string(rank) +
                         " done\n"),
              std::string::npos);
  }
}

TEST(Output, PartialLastLinesAreFlushedWithANewline) {
  auto r = run_hvdrun({"-np", "1", worker(), "partial"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:first line\n[0]<stdout>:no newline at the end\n");
  EXPECT_EQ(r.err, "[0]<stderr>:stderr without newline\n");
}

TEST(Output, CarriageReturnsEndChunksLikeHorovodrun) {
  auto r = run_hvdrun({"-np", "1", worker(), "progress"});
  ASSERT_EQ(r.status, 0) << r.err;
  // "20%\r" and "\n" arrive in different reads: the held "\r" makes them one "\r\n".
  EXPECT_EQ(r.out, "[0]<stdout>:10%\r[0]<stdout>:20%\r\n[0]<stdout>:done\r\n");
}

TEST(Output, TimestampPrecedesThePrefix) {
  auto r = run_hvdrun({"--prefix-output-with-timestamp", "-np", "1", worker(), "partial"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  // "Sat Jun 20 17:05:53 2026" is 24 characters.
  ASSERT_GT(lines[0].size(), 24u);
  EXPECT_EQ(lines[0].substr(24), "[0]<stdout>:first line");
  EXPECT_EQ(lines[0][13], ':');
  EXPECT_EQ(lines[0][16], ':');
}

TEST(Output, OutputFilenameWithOneRank) {
  TempDir tmp;
  auto dir = tmp.path / "logs";
  auto r = run_hvdrun({"--output-filename", dir.string(), "-np", "1", worker(), "partial"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(dir / "rank.0" / "stdout"), r.out);
  EXPECT_EQ(read_file(dir / "rank.0" / "stderr"), r.err);
  EXPECT_EQ(r.out, "[0]<stdout>:first line\n[0]<stdout>:no newline at the end\n");
}

TEST(Output, OutputFilenameWithTwelveRanksPadsRankDirectories) {
  TempDir tmp;
  auto dir = tmp.path / "out";
  std::filesystem::create_directories(dir / "rank.03");
  std::ofstream(dir / "rank.03" / "stdout") << "stale content that must be truncated\n";
  auto r = run_hvdrun({"--output-filename", dir.string(), "-np", "12", "/bin/sh", "-c",
                       "echo out $RANK; echo err $RANK >&2"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (int rank = 0; rank < 12; ++rank) {
    char name[16];
    std::snprintf(name, sizeof name, "rank.%02d", rank);
    std::string n = std::to_string(rank);
    EXPECT_EQ(read_file(dir / name / "stdout"), "[" + n + "]<stdout>:out " + n + "\n") << name;
    EXPECT_EQ(read_file(dir / name / "stderr"), "[" + n + "]<stderr>:err " + n + "\n") << name;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "rank.0"));
}

TEST(Output, VerboseNamesPhasesAndNeverPrintsTheSecret) {
  auto r = run_hvdrun({"--verbose", "-np", "2", "/bin/sh", "-c", "echo $HVDRUN_SECRET"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  std::string secret = lines[0].substr(lines[0].find(':') + 1);
  ASSERT_GE(secret.size(), 32u) << "workers should receive the job secret";
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hvdrun: spawned 2 workers in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hvdrun: rank 1 on localhost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hvdrun: job finished in"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hvdrun::itest

namespace hvdrun::itest {
namespace {

// --ranks-filter and --line-prefix on a real job: the console shows rank 1 only, with its host;
// --output-filename gets every rank.
TEST(OutputFilter, RanksFilterAndHostRankPrefix) {
  TempDir dir;
  auto r = run_hvdrun({"--ranks-filter", "1", "--line-prefix", "host-rank", "--output-filename",
                       dir.path.string(), "-np", "3", "sh", "-c", "echo hi $RANK"},
                      {}, std::chrono::seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[localhost:1]<stdout>:hi 1\n");
  std::ifstream zero(dir.path / "rank.0" / "stdout");
  const std::string text((std::istreambuf_iterator<char>(zero)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "[localhost:0]<stdout>:hi 0\n");
}

}  // namespace
}  // namespace hvdrun::itest
