// Console: hvdrun's stdout and stderr, written by a thread per console stream so that the io
// thread never waits for a reader. Each stream has a queue bounded in the pausing sense: past
// `pause_bytes` queued, paused() turns true and the pumps of worker output stop reading
// (their pipes fill, the workers block in write: back-pressure, nothing dropped) until the
// writer is back under `resume_bytes`. hvdrun's own lines are queued whatever the state.
// stdout and stderr on one file (`2>&1`) share one writer, so their lines keep their order.
// A stream whose reader is gone (EPIPE) is closed(); any other write error fails it, once,
// with a "hvdrun: cannot write ..." line on stderr, and failure() remembers the first worker
// output lost (also when the stream failed on one of hvdrun's own lines before it).
// Lifetime: created and destroyed on the io thread; write()/paused()/closed() are
// thread-safe. Destruction waits at most 1 s for what is queued, then abandons it (a writer
// blocked on a reader that never reads is left to the end of the process).
#pragma once

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/stream_kind.h"

namespace hvdrun::launcher {

struct ConsoleOptions {
  int stdout_fd = 1;
  int stderr_fd = 2;
  std::size_t pause_bytes = 4u << 20;   // queued bytes at which paused() turns true
  std::size_t resume_bytes = 1u << 20;  // ... and below which it turns false again
};

class ConsoleWriter;

class Console {
 public:
  Console(boost::asio::io_context& io, ConsoleOptions options = {});
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Queues `bytes` (whole lines) for `kind`; `origin` ("rank 3's stdout") names them in a
  // failure; empty for hvdrun's own lines. Never blocks; dropped once the stream is closed
  // or failed.
  void write(StreamKind kind, std::string bytes, std::string origin = {});
  bool paused(StreamKind kind) const noexcept;
  bool any_paused() const noexcept {
    return paused(StreamKind::kStdout) || paused(StreamKind::kStderr);
  }
  // Completes at the next resume of any stream or at wake(); callers re-check paused().
  boost::asio::awaitable<void> next_resume();
  // Ends every next_resume() wait now.
  void wake();
  bool closed(StreamKind kind) const noexcept;
  // The first output that could not be written ("rank 2's stdout to hvdrun's stdout: No space
  // left on device"); empty when none.
  std::string failure() const;
  // Waits until every queued byte was written (or its stream closed or failed). Calls `poll`
  // every few milliseconds; gives up when it returns true or after `limit`. Returns whether
  // everything was written.
  bool drain(std::optional<std::chrono::milliseconds> limit, const std::function<bool()>& poll);
  // Bytes still queued on `kind`'s writer.
  std::size_t queued(StreamKind kind) const;

 private:
  ConsoleWriter& writer(StreamKind kind) const;

  boost::asio::io_context& io_;
  boost::asio::steady_timer resume_;  // never expires: cancelled at each resume
  std::array<std::shared_ptr<ConsoleWriter>, 2> writers_;  // stdout, stderr (maybe the same)
  bool gave_up_ = false;  // a drain gave up: destruction abandons at once
};

}  // namespace hvdrun::launcher
