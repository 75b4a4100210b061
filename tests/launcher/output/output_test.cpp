// LineSplitter (pure byte-stream splitting) and OutputSink (prefixes, tee files, tails).
#include "launcher/output/output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hvdrun/error.h"
#include "tests/support/files.h"

namespace hvdrun::launcher {
namespace {

using hvdrun::test::read_file;

using Chunks = std::vector<std::string>;

// Feeds `parts` one after another, then finishes; returns every emitted chunk.
Chunks split(const std::vector<std::string>& parts, std::size_t cap = LineSplitter::kDefaultCap,
             bool finish = true) {
  LineSplitter splitter(cap);
  Chunks out;
  auto emit = [&](std::string_view chunk) { out.emplace_back(chunk); };
  for (const auto& part : parts) splitter.feed(part, emit);
  if (finish) splitter.finish(emit);
  return out;
}

TEST(LineSplitter, SplitsAtNewlinesKeepingThem) {
  EXPECT_EQ(split({"a\nbb\n\nccc\n"}), (Chunks{"a\n", "bb\n", "\n", "ccc\n"}));
}

TEST(LineSplitter, JoinsALineFedInPieces) {
  EXPECT_EQ(split({"he", "ll", "o\nwor", "ld\n"}), (Chunks{"hello\n", "world\n"}));
}

TEST(LineSplitter, CarriageReturnEndsAChunk) {
  EXPECT_EQ(split({"10%\r20%\r30%\n"}), (Chunks{"10%\r", "20%\r", "30%\n"}));
}

TEST(LineSplitter, CrLfIsOneTerminator) {
  EXPECT_EQ(split({"a\r\nb\r\n"}), (Chunks{"a\r\n", "b\r\n"}));
}

TEST(LineSplitter, CrLfSplitAcrossFeedsStaysWhole) {
  LineSplitter splitter;
  Chunks out;
  auto emit = [&](std::string_view chunk) { out.emplace_back(chunk); };
  splitter.feed("line\r", emit);
  EXPECT_TRUE(out.empty()) << "a trailing \\r must be held until the next byte";
  splitter.feed("\nnext\r", emit);
  splitter.feed("x", emit);
  splitter.finish(emit);
  EXPECT_EQ(out, (Chunks{"line\r\n", "next\r", "x"}));
}

TEST(LineSplitter, HeldCarriageReturnIsFlushedAtEof) {
  EXPECT_EQ(split({"progress\r"}), (Chunks{"progress\r"}));
}

TEST(LineSplitter, BinaryBytesPassThroughUnchanged) {
  std::string binary("a\0b\xff\xfe\x80\n\0\n", 9);
  Chunks out = split({binary.substr(0, 3), binary.substr(3)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], std::string("a\0b\xff\xfe\x80\n", 7));
  EXPECT_EQ(out[1], std::string("\0\n", 2));
}

TEST(LineSplitter, OneMebibyteLineStaysWholeWhenFedInReads) {
  std::string line(1 << 20, 'x');
  for (std::size_t i = 0; i < line.size(); i += 4099) line[i] = static_cast<char>('a' + i % 26);
  line += '\n';
  std::vector<std::string> reads;
  for (std::size_t i = 0; i < line.size(); i += 65536) reads.push_back(line.substr(i, 65536));
  Chunks out = split(reads);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], line);
}

TEST(LineSplitter, PartialLastLineIsFlushedAtEofOnly) {
  EXPECT_EQ(split({"done\nno newline"}, LineSplitter::kDefaultCap, false), (Chunks{"done\n"}));
  EXPECT_EQ(split({"done\nno newline"}), (Chunks{"done\n", "no newline"}));
}

TEST(LineSplitter, FinishWithNothingPendingEmitsNothing) {
  EXPECT_EQ(split({"a\n"}), (Chunks{"a\n"}));
  EXPECT_TRUE(split({}).empty());
}

TEST(LineSplitter, LinesLongerThanTheCapComeOutInCapPieces) {
  // Unterminated bytes beyond the cap are emitted without waiting for a newline.
  LineSplitter splitter(4);
  Chunks out;
  auto emit = [&](std::string_view chunk) { out.emplace_back(chunk); };
  splitter.feed("abcdefghij", emit);
  EXPECT_EQ(out, (Chunks{"abcd", "efgh"}));
  EXPECT_LE(splitter.buffered(), 4u);
  splitter.feed("k\n", emit);
  EXPECT_EQ(out, (Chunks{"abcd", "efgh", "ijk\n"}));
  // A terminated line longer than the cap in one feed: the terminator stays on the last piece.
  EXPECT_EQ(split({"0123456789\n"}, 4), (Chunks{"0123", "4567", "89\n"}));
  EXPECT_EQ(split({"01234567\r\n"}, 4), (Chunks{"0123", "4567\r\n"}));
}

TEST(RankDirectory, PadsToTheDigitsOfTheLastRank) {
  EXPECT_EQ(rank_directory_name(0, 1), "rank.0");
  EXPECT_EQ(rank_directory_name(9, 10), "rank.9");
  EXPECT_EQ(rank_directory_name(3, 12), "rank.03");
  EXPECT_EQ(rank_directory_name(11, 12), "rank.11");
  EXPECT_EQ(rank_directory_name(7, 101), "rank.007");
}

TEST(Asctime, MatchesTheCLibrary) {
  std::time_t when = 1'781'975'153;  // a fixed instant
  std::tm local{};
  ::localtime_r(&when, &local);
  char expected[64];
  ::asctime_r(&local, expected);
  EXPECT_EQ(asctime_text(when) + "\n", expected);
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  ::lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/hvdrun-output-test-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

WorkerId worker(int slot) {
  return {0, slot, 0};
}

// A Console on two files for the OutputSink tests; flush() waits until it wrote everything.
struct TestConsole {
  boost::asio::io_context io;
  Console console;
  TestConsole(int out, int err) : console(io, {out, err}) {}
  void flush() { EXPECT_TRUE(console.drain(std::chrono::seconds(5), nullptr)); }
};

// An OutputSink whose console writes stdout and stderr to one temporary file.
struct SinkOnOneFile {
  explicit SinkOnOneFile(OutputOptions options)
      : out(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600)),
        console(out.get(), out.get()),
        sink(std::move(options), console.console) {}
  // Everything written so far.
  std::string text() {
    console.flush();
    return read_all(out.get());
  }
  TempDir tmp;
  UniqueFd out;
  TestConsole console;
  OutputSink sink;
};

TEST(OutputSink, PrefixesChunksAndTeesToRankFiles) {
  TempDir tmp;
  UniqueFd out(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600));
  UniqueFd err(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(out.valid() && err.valid());
  auto dir = (tmp.path / "logs" / "deep").string();
  {
    TestConsole console(out.get(), err.get());
    OutputSink sink({12, false, dir, 10}, console.console);
    for (int rank : {0, 3, 11}) sink.add_worker(worker(rank), rank);
    sink.write(worker(3), StreamKind::kStdout, "hello\n");
    sink.write(worker(11), StreamKind::kStderr, "partial");
    sink.write(worker(3), StreamKind::kStdout, "50%\r");
    sink.finish(worker(11), StreamKind::kStderr);
    sink.finish(worker(3), StreamKind::kStdout);
  }
  EXPECT_EQ(read_all(out.get()), "[3]<stdout>:hello\n[3]<stdout>:50%\r");
  EXPECT_EQ(read_all(err.get()), "[11]<stderr>:partial\n");
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.03" / "stdout"),
            "[3]<stdout>:hello\n[3]<stdout>:50%\r");
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.11" / "stderr"), "[11]<stderr>:partial\n");
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.00" / "stdout"), "");
}

// Each stream is cut into lines by the sink: a line split over reads arrives whole, lines of
// one read arrive in order, a partial last line waits for finish(), and the two streams of a
// worker do not mix their pieces.
TEST(OutputSink, LinesSplitAcrossWritesArriveWholeAndAPartialOneAtFinish) {
  SinkOnOneFile file({2, false, std::nullopt, 10});
  OutputSink& sink = file.sink;
  sink.add_worker(worker(1), 1);
  sink.write(worker(1), StreamKind::kStdout, "hel");
  sink.write(worker(1), StreamKind::kStderr, "warn");
  sink.write(worker(1), StreamKind::kStdout, "lo\nwor");
  sink.write(worker(1), StreamKind::kStdout, "ld\nthree\nfour\ntail");
  sink.write(worker(1), StreamKind::kStderr, "ing\n");
  const std::string lines =
      "[1]<stdout>:hello\n[1]<stdout>:world\n[1]<stdout>:three\n[1]<stdout>:four\n"
      "[1]<stderr>:warning\n";
  EXPECT_EQ(file.text(), lines);
  sink.finish(worker(1), StreamKind::kStdout);
  sink.finish(worker(1), StreamKind::kStderr);  // nothing held: nothing written
  EXPECT_EQ(file.text(), lines + "[1]<stdout>:tail\n");
}

// The partial line of the worker that reads the terminal (a prompt) is shown at once, without
// a line end. What its worker writes next continues it; after a line typed at the terminal
// (whose echo ended the line on the screen) it is a line of its own; another worker's output
// first ends it. The tee file gets whole lines.
TEST(OutputSink, AShownPartialLineStaysOpenUntilSomethingEndsIt) {
  TempDir tmp;
  UniqueFd out(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600));
  UniqueFd err(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(out.valid() && err.valid());
  const auto dir = (tmp.path / "logs").string();
  TestConsole console(out.get(), err.get());
  OutputSink sink({2, false, dir, 10}, console.console);
  sink.add_worker(worker(0), 0);
  sink.add_worker(worker(1), 1);
  sink.show_partial(worker(0), StreamKind::kStdout);  // nothing held: nothing shown
  sink.write(worker(0), StreamKind::kStdout, "Loading");
  EXPECT_TRUE(sink.holds_partial(worker(0), StreamKind::kStdout));
  sink.show_partial(worker(0), StreamKind::kStdout);
  EXPECT_FALSE(sink.holds_partial(worker(0), StreamKind::kStdout));
  sink.write(worker(0), StreamKind::kStdout, "...");
  sink.show_partial(worker(0), StreamKind::kStdout);
  sink.write(worker(0), StreamKind::kStdout, " done\n(Pdb) ");
  sink.show_partial(worker(0), StreamKind::kStdout);
  sink.terminal_line_typed();
  sink.write(worker(0), StreamKind::kStdout, "42\n(Pdb) ");
  sink.show_partial(worker(0), StreamKind::kStdout);
  sink.write(worker(1), StreamKind::kStdout, "other\n");
  sink.write(worker(1), StreamKind::kStderr, "err\n");  // another stream: nothing to end
  sink.finish(worker(0), StreamKind::kStdout);
  sink.write(worker(0), StreamKind::kStderr, "> ");
  sink.show_partial(worker(0), StreamKind::kStderr);
  sink.finish(worker(0), StreamKind::kStderr);  // the stream ends on an open line: it ends
  console.flush();
  EXPECT_EQ(read_all(out.get()),
            "[0]<stdout>:Loading... done\n[0]<stdout>:(Pdb) [0]<stdout>:42\n[0]<stdout>:(Pdb) "
            "\n[1]<stdout>:other\n");
  EXPECT_EQ(read_all(err.get()), "[1]<stderr>:err\n[0]<stderr>:> \n");
  EXPECT_EQ(
      read_file(std::filesystem::path(dir) / "rank.0" / "stdout"),
      "[0]<stdout>:Loading... done\n[0]<stdout>:(Pdb) \n[0]<stdout>:42\n[0]<stdout>:(Pdb) \n");
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.0" / "stderr"), "[0]<stderr>:> \n");
}

// Output on the other stream ends the open line too (one screen), a held '\r' is not shown
// (it may begin "\r\n") and leaves the open line as it is, and the tee file gets the line end
// when the line is ended.
TEST(OutputSink, AnOpenLineIsEndedByEitherStreamAndNotByAHeldCarriageReturn) {
  TempDir tmp;
  UniqueFd out(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(out.valid());
  const auto dir = (tmp.path / "logs").string();
  TestConsole console(out.get(), out.get());
  OutputSink sink({2, false, dir, 10}, console.console);
  sink.add_worker(worker(0), 0);
  sink.add_worker(worker(1), 1);
  sink.write(worker(0), StreamKind::kStdout, "(a) ");
  sink.show_partial(worker(0), StreamKind::kStdout);
  sink.write(worker(0), StreamKind::kStdout, "x\r");
  EXPECT_FALSE(sink.holds_partial(worker(0), StreamKind::kStdout));
  sink.show_partial(worker(0), StreamKind::kStdout);
  sink.write(worker(1), StreamKind::kStderr, "warning\n");
  sink.write(worker(0), StreamKind::kStdout, "y\n");
  console.flush();
  EXPECT_EQ(read_all(out.get()),
            "[0]<stdout>:(a) \n[1]<stderr>:warning\n[0]<stdout>:x\r[0]<stdout>:y\n");
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.0" / "stdout"),
            "[0]<stdout>:(a) \n[0]<stdout>:x\r[0]<stdout>:y\n");
}

TEST(OutputSink, HostRankAndNoPrefix) {
  SinkOnOneFile host_rank({4, false, std::nullopt, 10, OutputPrefix::kHostRank});
  host_rank.sink.add_worker(worker(2), 2, "node1");
  host_rank.sink.write(worker(2), StreamKind::kStdout, "a\n");
  host_rank.sink.write(worker(2), StreamKind::kStderr, "b\n");
  EXPECT_EQ(host_rank.text(), "[node1:2]<stdout>:a\n[node1:2]<stderr>:b\n");
  SinkOnOneFile none({4, false, std::nullopt, 10, OutputPrefix::kNone});
  none.sink.add_worker(worker(2), 2, "node1");
  none.sink.write(worker(2), StreamKind::kStdout, "a\nb\n");
  EXPECT_EQ(none.text(), "a\nb\n");
}

// --ranks-filter: the console shows the ranks listed; every rank's tee file gets all of its own.
TEST(OutputSink, RanksFilterShowsOnlyItsRanksAndTheFilesGetAll) {
  TempDir tmp;
  const auto dir = (tmp.path / "logs").string();
  SinkOnOneFile sink({6, false, dir, 10, OutputPrefix::kRank, {{0, 0}, {3, 4}}});
  for (int rank = 0; rank < 6; ++rank) {
    sink.sink.add_worker(worker(rank), rank);
    sink.sink.write(worker(rank), StreamKind::kStdout, "line " + std::to_string(rank) + "\n");
  }
  EXPECT_EQ(sink.text(), "[0]<stdout>:line 0\n[3]<stdout>:line 3\n[4]<stdout>:line 4\n");
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.5" / "stdout"), "[5]<stdout>:line 5\n");
  // A partial line of a rank not shown is not put on the screen either.
  sink.sink.write(worker(1), StreamKind::kStdout, "prompt> ");
  sink.sink.show_partial(worker(1), StreamKind::kStdout);
  sink.sink.write(worker(0), StreamKind::kStdout, "next\n");
  EXPECT_EQ(sink.text(),
            "[0]<stdout>:line 0\n[3]<stdout>:line 3\n[4]<stdout>:line 4\n[0]<stdout>:next\n");
}

TEST(OutputSink, TimestampComesBeforeThePrefix) {
  SinkOnOneFile file({1, true, std::nullopt, 10});
  OutputSink& sink = file.sink;
  sink.add_worker(worker(0), 0);
  sink.write(worker(0), StreamKind::kStdout, "x\n");
  const std::string text = file.text();
  ASSERT_EQ(text.size(), 24 + std::string("[0]<stdout>:x\n").size()) << text;
  EXPECT_EQ(text.substr(24), "[0]<stdout>:x\n");
  EXPECT_EQ(text[3], ' ');
  EXPECT_EQ(text[13], ':');
}

TEST(OutputSink, KeepsTheLastStderrLinesOfEachRank) {
  SinkOnOneFile file({2, false, std::nullopt, 3});
  OutputSink& sink = file.sink;
  sink.add_worker(worker(0), 0);
  sink.add_worker(worker(1), 1);
  for (int i = 0; i < 5; ++i) {
    sink.write(worker(1), StreamKind::kStderr, "err " + std::to_string(i) + "\n");
  }
  sink.write(worker(1), StreamKind::kStdout, "not stderr\n");
  const auto& tail = sink.last_stderr_lines(worker(1));
  EXPECT_EQ(std::vector<std::string>(tail.begin(), tail.end()),
            (std::vector<std::string>{"err 2", "err 3", "err 4"}));
  EXPECT_TRUE(sink.last_stderr_lines(worker(0)).empty());
}

// Output is keyed by the worker, not the rank: a worker added later (another host's slot 0, a
// replacement incarnation) gets the prefix of the rank it was given, and its own tail.
TEST(OutputSink, WorkersAddedLaterKeepTheirOwnRankAndTail) {
  SinkOnOneFile file({2, false, std::nullopt, 3});
  OutputSink& sink = file.sink;
  const WorkerId first{0, 0, 0};
  const WorkerId other_host{1, 0, 0};
  const WorkerId replacement{0, 0, 1};
  sink.add_worker(first, 0);
  sink.write(first, StreamKind::kStderr, "first\n");
  sink.add_worker(other_host, 1);
  sink.add_worker(replacement, 2);
  sink.write(replacement, StreamKind::kStderr, "again\n");
  sink.write(other_host, StreamKind::kStdout, "other\n");
  EXPECT_EQ(file.text(), "[0]<stderr>:first\n[2]<stderr>:again\n[1]<stdout>:other\n");
  EXPECT_EQ(sink.last_stderr_lines(first).front(), "first");
  EXPECT_EQ(sink.last_stderr_lines(replacement).front(), "again");
  EXPECT_TRUE(sink.last_stderr_lines(other_host).empty());
}

// /dev/full as hvdrun's stdout: the failure is reported once and remembered for the exit
// status; stderr and the tee files still get their output.
TEST(OutputSink, AConsoleWriteErrorIsReportedOnceAndRemembered) {
  TempDir tmp;
  UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  UniqueFd err(::open(tmp.path.c_str(), O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(full.valid() && err.valid());
  const auto dir = (tmp.path / "logs").string();
  TestConsole console(full.get(), err.get());
  OutputSink sink({2, false, dir, 10}, console.console);
  sink.add_worker(worker(1), 1);
  EXPECT_EQ(sink.write_failed(), "");
  sink.write(worker(1), StreamKind::kStdout, "lost\n");
  sink.write(worker(1), StreamKind::kStdout, "lost too\n");
  sink.write(worker(1), StreamKind::kStderr, "kept\n");
  console.flush();
  EXPECT_EQ(sink.write_failed(), "rank 1's stdout to hvdrun's stdout: No space left on device");
  // stderr: the rank's line, and the report, once (the writer's line may come first).
  const std::string report =
      "hvdrun: cannot write rank 1's stdout to hvdrun's stdout: No space left on device; later "
      "output to it is lost\n";
  const std::string text = read_all(err.get());
  EXPECT_TRUE(text == "[1]<stderr>:kept\n" + report || text == report + "[1]<stderr>:kept\n")
      << text;
  EXPECT_EQ(read_file(std::filesystem::path(dir) / "rank.1" / "stdout"),
            "[1]<stdout>:lost\n[1]<stdout>:lost too\n");
}

// A link planted where a tee file goes is not followed; its target stays untouched.
TEST(OutputSink, ATeeFileThatIsASymbolicLinkIsRefused) {
  TempDir tmp;
  const auto dir = tmp.path / "logs";
  std::filesystem::create_directories(dir / "rank.0");
  std::filesystem::create_symlink(tmp.path / "target", dir / "rank.0" / "stdout");
  TestConsole console(1, 2);
  OutputSink sink({1, false, dir.string(), 10}, console.console);
  try {
    sink.add_worker(worker(0), 0);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank.0/stdout': it is a symbolic link"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.path / "target"));
}

// Another user's rank directory could hold their links: refused (needs root to set up).
TEST(OutputSink, ARankDirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  TempDir tmp;
  const auto dir = tmp.path / "logs";
  std::filesystem::create_directories(dir / "rank.0");
  ASSERT_EQ(::chown((dir / "rank.0").c_str(), 65534, 65534), 0);
  TestConsole console(1, 2);
  OutputSink sink({1, false, dir.string(), 10}, console.console);
  try {
    sink.add_worker(worker(0), 0);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank.0' belongs to user 65534"), std::string::npos)
        << e.what();
  }
}

TEST(OutputSink, UnwritableDirectoryIsAUsageErrorNamingIt) {
  try {
    TestConsole console(1, 2);
    OutputSink sink({1, false, std::string("/proc/hvdrun-no-such-dir"), 10}, console.console);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/hvdrun-no-such-dir"), std::string::npos);
  }
}

}  // namespace
}  // namespace hvdrun::launcher
