// Console: writes never wait for the reader; pausing and resuming around the queue limits;
// a reader that is gone; order on a shared file; destruction with a reader that never reads.
#include "launcher/output/console.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace hvdrun::launcher {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A pipe; a write to it once its reader is gone fails with EPIPE, as in hvdrun (which ignores
// SIGPIPE), instead of killing the test.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
  Pipe() {
    ::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = UniqueFd(fds[0]);
    write = UniqueFd(fds[1]);
  }
};

std::string read_everything(int fd) {
  std::string text;
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

std::string numbered_line(int i) {
  std::string line = std::to_string(i) + ":";
  line.resize(1023, 'x');
  return line + "\n";
}

// 1 MiB queued on a pipe nobody reads: write() returns at once, the console pauses; a
// reader that catches up resumes it (waking a waiter) and receives every line in order.
TEST(Console, PausesWithoutBlockingAndResumesWhenTheReaderCatchesUp) {
  Pipe pipe;
  asio::io_context io(1);
  std::string expected;
  std::string got;
  std::thread reader;
  {
    Console console(io, {pipe.write.get(), 2, 256 * 1024, 64 * 1024});
    for (int i = 0; i < 1024; ++i) {
      expected += numbered_line(i);
      console.write(StreamKind::kStdout, numbered_line(i), "rank 0's stdout");
    }
    EXPECT_TRUE(console.paused(StreamKind::kStdout));
    EXPECT_FALSE(console.drain(milliseconds(100), nullptr)) << "nobody reads: it cannot drain";
    bool resumed = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          while (console.paused(StreamKind::kStdout)) co_await console.next_resume();
          resumed = true;
        },
        asio::detached);
    io.poll();
    EXPECT_FALSE(resumed);
    reader = std::thread([&] { got = read_everything(pipe.read.get()); });
    for (int i = 0; i < 500 && !resumed; ++i) io.run_for(milliseconds(10));
    EXPECT_TRUE(resumed);
    EXPECT_TRUE(console.drain(seconds(10), nullptr));
    EXPECT_FALSE(console.paused(StreamKind::kStdout));
    EXPECT_EQ(console.queued(StreamKind::kStdout), 0u);
  }  // the console's own descriptor closes with it
  pipe.write.reset();
  reader.join();
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "lines lost or out of order";
}

// A console that another process made non-blocking: a full pipe is waited for, not a failure.
TEST(Console, ANonBlockingConsoleIsWaitedFor) {
  Pipe pipe;
  ASSERT_EQ(::fcntl(pipe.write.get(), F_SETFL, O_NONBLOCK), 0);
  asio::io_context io(1);
  std::string expected;
  std::string got;
  std::thread reader;
  {
    Console console(io, {pipe.write.get(), 2});
    for (int i = 0; i < 512; ++i) {
      expected += numbered_line(i);
      console.write(StreamKind::kStdout, numbered_line(i), "rank 0's stdout");
    }
    std::this_thread::sleep_for(milliseconds(100));  // the writer has met a full pipe by now
    reader = std::thread([&] { got = read_everything(pipe.read.get()); });
    EXPECT_TRUE(console.drain(seconds(10), nullptr));
    EXPECT_EQ(console.failure(), "");
  }
  pipe.write.reset();
  reader.join();
  EXPECT_TRUE(got == expected) << got.size() << " of " << expected.size() << " bytes";
}

// The reader is gone (`| head`): the stream is closed, what was queued is dropped, nothing
// counts as a failure, and a paused waiter is woken to see it.
TEST(Console, AReaderThatIsGoneClosesTheStream) {
  Pipe pipe;
  pipe.read.reset();
  asio::io_context io(1);
  Console console(io, {pipe.write.get(), 2, 4096, 1024});
  for (int i = 0; i < 16; ++i)
    console.write(StreamKind::kStdout, numbered_line(i), "rank 1's stdout");
  EXPECT_TRUE(console.drain(seconds(10), nullptr));
  EXPECT_TRUE(console.closed(StreamKind::kStdout));
  EXPECT_FALSE(console.closed(StreamKind::kStderr));
  EXPECT_FALSE(console.paused(StreamKind::kStdout));
  EXPECT_EQ(console.failure(), "");
}

// stdout and stderr on one file (`2>&1`): one writer, so lines keep the order of write().
TEST(Console, OneFileForBothStreamsKeepsTheOrder) {
  UniqueFd file(::open("/tmp", O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(file.valid());
  UniqueFd other(::dup(file.get()));
  asio::io_context io(1);
  std::string expected;
  {
    Console console(io, {file.get(), other.get()});
    for (int i = 0; i < 2000; ++i) {
      const auto kind = i % 3 == 0 ? StreamKind::kStderr : StreamKind::kStdout;
      const std::string line =
          (kind == StreamKind::kStderr ? "err " : "out ") + std::to_string(i) + "\n";
      expected += line;
      console.write(kind, line);
    }
    EXPECT_TRUE(console.drain(seconds(10), nullptr));
  }
  ::lseek(file.get(), 0, SEEK_SET);
  EXPECT_EQ(read_everything(file.get()), expected);
}

// A write error other than EPIPE (/dev/full) names the output and the file, once, on stderr.
TEST(Console, AWriteErrorIsReportedOnceOnStderr) {
  UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  UniqueFd err(::open("/tmp", O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(full.valid() && err.valid());
  asio::io_context io(1);
  {
    Console console(io, {full.get(), err.get()});
    console.write(StreamKind::kStdout, "lost\n", "rank 4's stdout");
    EXPECT_TRUE(console.drain(seconds(10), nullptr));
    console.write(StreamKind::kStdout, "lost too\n", "rank 4's stdout");
    EXPECT_TRUE(console.drain(seconds(10), nullptr));
    EXPECT_EQ(console.failure(), "rank 4's stdout to hvdrun's stdout: No space left on device");
  }
  ::lseek(err.get(), 0, SEEK_SET);
  EXPECT_EQ(read_everything(err.get()),
            "hvdrun: cannot write rank 4's stdout to hvdrun's stdout: No space left on device; "
            "later output to it is lost\n");
}

// The stream fails on one of hvdrun's own lines: the worker output lost after it is the
// failure (the job must not end as if everything was written).
TEST(Console, WorkerOutputLostAfterHvdrunsOwnLineFailedIsTheFailure) {
  UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(full.valid());
  asio::io_context io(1);
  Console console(io, {full.get(), full.get()});
  console.write(StreamKind::kStderr, "hvdrun: a notice\n");
  EXPECT_TRUE(console.drain(seconds(10), nullptr));
  EXPECT_EQ(console.failure(), "");
  console.write(StreamKind::kStderr, "lost\n", "rank 1's stderr");
  console.write(StreamKind::kStderr, "lost too\n", "rank 0's stderr");
  EXPECT_EQ(console.failure(), "rank 1's stderr to hvdrun's stdout: No space left on device");
}

// A reader that never reads: a drain gives up at its limit, and destruction returns (the
// writer, blocked in write, is left behind with its own descriptor).
TEST(Console, DestructionLeavesAStreamNobodyReads) {
  Pipe pipe;
  asio::io_context io(1);
  {
    Console console(io, {pipe.write.get(), 2});
    for (int i = 0; i < 1024; ++i) console.write(StreamKind::kStdout, numbered_line(i));
    EXPECT_FALSE(console.drain(milliseconds(200), nullptr));
    EXPECT_GT(console.queued(StreamKind::kStdout), 0u);
  }  // returns although its writer is blocked
}

}  // namespace
}  // namespace hvdrun::launcher
