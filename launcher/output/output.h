// Worker output: LineSplitter cuts a byte stream into chunks (pure, no I/O); OutputSink cuts
// each stream of a worker (WorkerId) with one, queues the chunks with their rank's
// `[rank]<stdout>:` / `[rank]<stderr>:` prefix (and an optional asctime-like timestamp) on the
// Console (console.h), and tees them to DIR/rank.N/{stdout,stderr} with --output-filename.
// Reads JobSpec's output settings.
#pragma once

#include <array>
#include <cstddef>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/output/console.h"
#include "launcher/plan/worker_id.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

// Cuts bytes into chunks that end at '\n' or '\r' (the terminator is kept; "\r\n" is one
// terminator). Bytes pass through unchanged. A '\r' at the end of the bytes fed so far is
// held until the next byte or finish(), so a "\r\n" split across reads stays whole. A line
// longer than `cap` is emitted in cap-sized pieces (without terminator) instead of being
// buffered without bound. Not thread-safe; one per stream.
class LineSplitter {
 public:
  using Emit = std::function<void(std::string_view chunk)>;
  static constexpr std::size_t kDefaultCap = 8u << 20;  // 8 MiB

  explicit LineSplitter(std::size_t cap = kDefaultCap) : cap_(cap == 0 ? 1 : cap) {}
  void feed(std::string_view bytes, const Emit& emit);
  // End of stream: emits what is left (a partial last line), if anything.
  void finish(const Emit& emit);
  // Emits the partial last line held so far, if any (not a held '\r'); what follows starts a
  // new piece.
  void flush(const Emit& emit);
  // Whether flush() would emit something.
  bool flushable() const noexcept { return !held_cr_ && !pending_.empty(); }
  std::size_t buffered() const noexcept { return pending_.size(); }

 private:
  void emit_piece(std::string_view chunk, const Emit& emit);
  void append_capped(std::string_view bytes, const Emit& emit);
  std::size_t cap_;
  std::string pending_;
  bool held_cr_ = false;  // pending_ ends with a '\r' whose successor is unknown
};

struct OutputOptions {
  int num_proc = 1;                           // the digits of rank.N directory names
  bool timestamp = false;                     // --prefix-output-with-timestamp
  std::optional<std::string> directory;       // --output-filename
  std::size_t kept_stderr_lines = 10;         // for the failure summary
  OutputPrefix prefix = OutputPrefix::kRank;  // --line-prefix
  std::vector<RankRange>
      ranks_filter{};  // --ranks-filter: the console shows only these; empty: all
  // A worker's stdout line that starts with `capture_prefix` goes to `capture` (with its line
  // end), not to the console or a file (hvdrun --preflight reads its probes' reports so).
  std::string capture_prefix{};
  std::function<void(std::string_view line)> capture{};
};

// "rank.07" for rank 7 of 12: zero-padded to the digit count of num_proc-1 (at least 1).
std::string rank_directory_name(int rank, int num_proc);

// "Sat Jun 20 17:05:53 2026" (local time, like asctime without the newline).
std::string asctime_text(std::time_t when);

// Worker output on its way out: each stream of a worker is cut into lines by a LineSplitter of
// its own, and each line (or cap-sized piece) gets its rank's prefix. What one write() cuts
// goes out together: one queued entry of the Console and one write loop per tee file, so
// lines of different ranks never interleave and a read of many short lines costs one entry,
// not one per line. A piece without a terminator (a partial last line at finish(), a cap
// piece) gets a '\n' appended. A console stream whose reader is gone (EPIPE, as with
// `hvdrun ... | head`) is closed (the tee files are still written). Any other write error (a
// full disk, /dev/full) is reported once per destination on stderr, naming the file and rank
// and the errno text; that destination gets nothing more, and write_failed() makes the job's
// exit status non-zero.
// Tee files are opened with O_NOFOLLOW, mode 0666 less the umask, in directories that must
// belong to hvdrun's user. Lifetime: owns the tee files, uses `console` (which must outlive
// it); io thread only.
class OutputSink {
 public:
  // Creates the --output-filename directory; throws UsageError naming it on failure.
  OutputSink(OutputOptions options, Console& console);
  // Registers a worker before its first write: its lines get the prefix of `rank`, and with
  // --output-filename its files DIR/rank.N/{stdout,stderr} are created (truncated). Throws
  // UsageError naming the path on failure.
  void add_worker(const WorkerId& id, int rank, std::string host = {});
  // A warm spare (no rank until promoted): its lines are prefixed "[spare.K]", its
  // --output-filename files are in spare.K/ (K: its worker key), and a --ranks-filter hides it.
  void add_spare(const WorkerId& id, std::uint32_t key, std::string host = {});
  // An elastic re-formation gave the worker a new rank: its later lines carry it (its
  // --output-filename files stay those of its first rank).
  void set_rank(const WorkerId& id, int rank);
  // Bytes the worker wrote on `stream`: its whole lines go out; a partial last line waits for
  // the rest (or finish()).
  void write(const WorkerId& id, StreamKind stream, std::string_view bytes);
  // The end of the worker's `stream`: a partial last line still held goes out.
  void finish(const WorkerId& id, StreamKind stream);
  // Whether a partial last line of the worker's `stream` is held (not just a '\r' that may
  // be followed by '\n').
  bool holds_partial(const WorkerId& id, StreamKind stream) const;
  // The partial last line held (a prompt, such as pdb's "(Pdb) ", of the worker that reads
  // the terminal) goes out without waiting for its end, and without a line end, so that what
  // is typed follows it. The line stays open: the rest of it continues it (no prefix) unless
  // the line was ended meanwhile on the screen, by a line typed at the terminal
  // (terminal_line_typed()) or by other output of the workers (which first gets a line end,
  // on either stream: both are one screen); then the rest comes as a line of its own. A tee
  // file gets whole lines.
  void show_partial(const WorkerId& id, StreamKind stream);
  // A line typed at the terminal, echoed there, ended the open line on the screen.
  void terminal_line_typed();
  // The last stderr lines of a worker, oldest first, terminators removed.
  const std::deque<std::string>& last_stderr_lines(const WorkerId& id) const;
  // True once a write of that stream to the console failed with EPIPE.
  bool console_closed(StreamKind stream) const noexcept { return console_.closed(stream); }
  Console& console() noexcept { return console_; }
  // The first output that could not be written ("rank 2's stdout to hvdrun's stdout: No
  // space left on device"); empty when all was written. The console's failures are known
  // once it was drained.
  std::string write_failed() const {
    return first_failure_.empty() ? console_.failure() : first_failure_;
  }

 private:
  struct WorkerOutput {
    int rank = 0;
    std::string label;                      // a spare's "spare.K" while it has no rank
    std::string host;                       // for --line-prefix host-rank
    std::array<LineSplitter, 2> splitters;  // stdout, stderr
    std::array<UniqueFd, 2> files;          // stdout, stderr; closed without a directory
    std::array<std::string, 2> paths;
    std::deque<std::string> tail;
  };
  // What one write() or finish() of a stream cut, prefixed.
  struct Cut {
    WorkerOutput& worker;
    const WorkerId& id;
    bool is_err;
    std::string stamp{};  // with --prefix-output-with-timestamp: taken at the first piece
    std::string out{};
    bool open_line = false;        // show_partial(): no line end is added
    bool continues_line = false;   // the first piece continues the open line: no prefix
    bool ends_other_line = false;  // the console first ends another worker's open line
    std::string file_prefix{};     // written to the tee file before `out`
  };
  // The line a show_partial() left open (one at most: only the worker that reads the terminal
  // has its partial lines shown).
  struct OpenLine {
    WorkerId id;
    bool is_err = false;
    bool on_screen = true;  // nothing ended it on the screen yet
  };
  // Whether the open line is that of the worker's stream.
  bool owns_open_line(const WorkerId& id, bool is_err) const {
    return open_line_ && open_line_->id == id && open_line_->is_err == is_err;
  }
  // Before `cut` is sent: continues the open line, or ends it.
  void settle_open_line(const WorkerId& id, Cut& cut);
  // Writes `data` to the worker's tee file of that stream, if it has one (a failure is
  // reported once, and the file closed).
  void write_file(WorkerOutput& worker, bool is_err, std::string_view data);
  // Feeds (or, with `bytes` null, finishes) one stream's splitter and sends what it cut.
  void take(const WorkerId& id, StreamKind stream, const std::string_view* bytes);
  // Appends `chunk` with its prefix; keeps a stderr line for the tail.
  void append(Cut& cut, std::string_view chunk);
  // Writes `cut.file_prefix` and `cut.out` to the stream's tee file and queues `cut.out` on
  // the console (after a line end if it ends another worker's open line).
  void send(Cut& cut);
  // Whether the console shows `rank`'s output (--ranks-filter).
  bool shown(int rank) const;
  void open_worker(const WorkerId& id, int rank, std::string label, std::string host);
  // Reports a failed write of `rank`'s `stream` to `destination` once.
  void report_failure(int rank, bool is_err, const std::string& destination, int error);
  OutputOptions options_;
  Console& console_;
  std::map<WorkerId, WorkerOutput> workers_;
  std::optional<OpenLine> open_line_;
  std::string first_failure_;  // of a tee file
};

}  // namespace hvdrun::launcher
