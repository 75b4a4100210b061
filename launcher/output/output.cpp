// LineSplitter and OutputSink (output.h): prefixing, tee files and the stderr tails kept for
// the failure summary.
#include "launcher/output/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "hvdrun/error.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kMaxKeptLineBytes = 1000;

bool is_terminator(char c) {
  return c == '\n' || c == '\r';
}

std::size_t terminator_length(std::string_view chunk) {
  if (chunk.ends_with("\r\n")) return 2;
  return !chunk.empty() && is_terminator(chunk.back()) ? 1 : 0;
}

// A tee file: never through a symbolic link planted in its place; mode 0666 less the umask.
UniqueFd open_tee_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (!fd.valid()) {
    const int error = errno;
    throw UsageError("cannot open --output-filename file '" + path.string() +
                     "': " + (error == ELOOP ? "it is a symbolic link" : std::strerror(error)));
  }
  return fd;
}

// A directory of --output-filename must be a directory (not a link to one, for the rank
// directories) owned by this user: another user's directory could hold their links.
void check_own_directory(const std::filesystem::path& dir, bool allow_link) {
  struct stat st {};
  const int rc = allow_link ? ::stat(dir.c_str(), &st) : ::lstat(dir.c_str(), &st);
  if (rc != 0) {
    throw UsageError("cannot use --output-filename directory '" + dir.string() +
                     "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw UsageError("--output-filename directory '" + dir.string() + "' is not a directory" +
                     (S_ISLNK(st.st_mode) ? " but a symbolic link" : ""));
  }
  if (st.st_uid != ::geteuid()) {
    throw UsageError("--output-filename directory '" + dir.string() + "' belongs to user " +
                     std::to_string(st.st_uid) + ", not to hvdrun's user " +
                     std::to_string(::geteuid()));
  }
}

}  // namespace

void LineSplitter::emit_piece(std::string_view chunk, const Emit& emit) {
  std::size_t content = chunk.size() - terminator_length(chunk);
  while (content > cap_) {
    emit(chunk.substr(0, cap_));
    chunk.remove_prefix(cap_);
    content -= cap_;
  }
  if (!chunk.empty()) emit(chunk);
}

void LineSplitter::append_capped(std::string_view bytes, const Emit& emit) {
  pending_.append(bytes);
  if (pending_.size() <= cap_) return;
  std::string_view view(pending_);
  while (view.size() > cap_) {
    emit(view.substr(0, cap_));
    view.remove_prefix(cap_);
  }
  pending_.erase(0, pending_.size() - view.size());
}

void LineSplitter::feed(std::string_view in, const Emit& emit) {
  if (in.empty()) return;
  if (held_cr_) {
    held_cr_ = false;
    if (in.front() == '\n') {
      pending_.push_back('\n');
      in.remove_prefix(1);
    }
    emit_piece(pending_, emit);
    pending_.clear();
  }
  while (!in.empty()) {
    std::size_t t = 0;
    while (t < in.size() && !is_terminator(in[t])) ++t;
    if (t == in.size()) {
      append_capped(in, emit);
      return;
    }
    std::size_t end = t + 1;
    if (in[t] == '\r') {
      if (end == in.size()) {  // "\r" last: wait for the next byte
        append_capped(in.substr(0, t), emit);
        pending_.push_back('\r');
        held_cr_ = true;
        return;
      }
      if (in[end] == '\n') ++end;
    }
    if (pending_.empty()) {
      emit_piece(in.substr(0, end), emit);
    } else {
      pending_.append(in.substr(0, end));
      emit_piece(pending_, emit);
      pending_.clear();
    }
    in.remove_prefix(end);
  }
}

void LineSplitter::finish(const Emit& emit) {
  held_cr_ = false;
  if (pending_.empty()) return;
  emit_piece(pending_, emit);
  pending_.clear();
}

void LineSplitter::flush(const Emit& emit) {
  if (held_cr_ || pending_.empty()) return;
  emit_piece(pending_, emit);
  pending_.clear();
}

std::string rank_directory_name(int rank, int num_proc) {
  int width = 1;
  for (int n = num_proc - 1; n >= 10; n /= 10) ++width;
  std::string digits = std::to_string(rank);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, width - digits.size(), '0');
  return "rank." + digits;
}

std::string asctime_text(std::time_t when) {
  std::tm local{};
  ::localtime_r(&when, &local);
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char text[64];
  std::snprintf(text, sizeof text, "%.3s %.3s%3d %.2d:%.2d:%.2d %d", kDays[local.tm_wday % 7],
                kMonths[local.tm_mon % 12], local.tm_mday, local.tm_hour, local.tm_min,
                local.tm_sec, 1900 + local.tm_year);
  return text;
}

OutputSink::OutputSink(OutputOptions options, Console& console)
    : options_(std::move(options)), console_(console) {
  if (!options_.directory) return;
  std::error_code ec;
  std::filesystem::create_directories(*options_.directory, ec);
  if (ec) {
    throw UsageError("cannot create --output-filename directory '" + *options_.directory +
                     "': " + ec.message());
  }
  check_own_directory(*options_.directory, /*allow_link=*/true);
}

void OutputSink::add_worker(const WorkerId& id, int rank, std::string host) {
  open_worker(id, rank, {}, std::move(host));
}

void OutputSink::add_spare(const WorkerId& id, std::uint32_t key, std::string host) {
  open_worker(id, -1, "spare." + std::to_string(key), std::move(host));
}

void OutputSink::open_worker(const WorkerId& id, int rank, std::string label, std::string host) {
  auto& entry = workers_[id];
  entry.rank = rank;
  entry.label = std::move(label);
  entry.host = std::move(host);
  if (!options_.directory) return;
  namespace fs = std::filesystem;
  fs::path dir = fs::path(*options_.directory) /
                 (entry.label.empty() ? rank_directory_name(rank, options_.num_proc) : entry.label);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw UsageError("cannot create --output-filename directory '" + dir.string() +
                     "': " + ec.message());
  }
  check_own_directory(dir, /*allow_link=*/false);
  for (int i = 0; i < 2; ++i) {
    const fs::path path = dir / (i == 0 ? "stdout" : "stderr");
    entry.files[i] = open_tee_file(path);
    entry.paths[i] = path.string();
  }
}

void OutputSink::report_failure(int rank, bool is_err, const std::string& destination, int error) {
  const std::string what = "rank " + std::to_string(rank) + "'s " + (is_err ? "stderr" : "stdout") +
                           " to " + destination + ": " + std::strerror(error);
  if (first_failure_.empty()) first_failure_ = what;
  note("cannot write " + what + "; later output to it is lost");
}

void OutputSink::set_rank(const WorkerId& id, int rank) {
  if (const auto it = workers_.find(id); it != workers_.end()) {
    it->second.rank = rank;
    it->second.label.clear();
  }
}

void OutputSink::write(const WorkerId& id, StreamKind stream, std::string_view bytes) {
  take(id, stream, &bytes);
}

void OutputSink::finish(const WorkerId& id, StreamKind stream) {
  take(id, stream, nullptr);
}

bool OutputSink::holds_partial(const WorkerId& id, StreamKind stream) const {
  return workers_.at(id).splitters[stream == StreamKind::kStderr ? 1 : 0].flushable();
}

void OutputSink::show_partial(const WorkerId& id, StreamKind stream) {
  auto& worker = workers_.at(id);
  Cut cut{worker, id, stream == StreamKind::kStderr};
  if (!worker.splitters[cut.is_err ? 1 : 0].flushable() || !shown(worker.rank)) return;
  cut.open_line = true;
  settle_open_line(id, cut);
  worker.splitters[cut.is_err ? 1 : 0].flush(
      [this, &cut](std::string_view chunk) { append(cut, chunk); });
  if (cut.out.empty()) return;
  send(cut);
  open_line_ = OpenLine{id, cut.is_err};
}

void OutputSink::terminal_line_typed() {
  if (open_line_) open_line_->on_screen = false;
}

void OutputSink::settle_open_line(const WorkerId& id, Cut& cut) {
  if (!open_line_) return;
  if (owns_open_line(id, cut.is_err)) {
    cut.continues_line = open_line_->on_screen;
    if (!open_line_->on_screen) cut.file_prefix = "\n";
    open_line_.reset();
    return;
  }
  // Other output must not run on from the open line.
  cut.ends_other_line = open_line_->on_screen;
  write_file(workers_.at(open_line_->id), open_line_->is_err, "\n");  // its tee file's line end
  open_line_.reset();
}

void OutputSink::write_file(WorkerOutput& worker, bool is_err, std::string_view data) {
  const int index = is_err ? 1 : 0;
  auto& file = worker.files[index];
  if (data.empty() || file.get() < 0) return;
  if (const int error = hvdrun::write_all(file.get(), data); error != 0) {
    report_failure(worker.rank, is_err, "'" + worker.paths[index] + "'", error);
    file.reset();
  }
}

void OutputSink::take(const WorkerId& id, StreamKind stream, const std::string_view* bytes) {
  auto& worker = workers_.at(id);
  Cut cut{worker, id, stream == StreamKind::kStderr};
  // Two references: small enough for std::function to hold without allocating.
  const auto emit = [this, &cut](std::string_view chunk) {
    if (options_.capture && !cut.is_err && !cut.continues_line &&
        chunk.starts_with(options_.capture_prefix)) {
      return options_.capture(chunk);
    }
    if (cut.out.empty() && open_line_) settle_open_line(cut.id, cut);
    append(cut, chunk);
  };
  auto& splitter = worker.splitters[cut.is_err ? 1 : 0];
  if (bytes) {
    splitter.feed(*bytes, emit);
  } else {
    splitter.finish(emit);
    if (owns_open_line(id, cut.is_err)) {
      // The stream ended on the open line: end it (on the screen only if nothing did).
      (open_line_->on_screen ? cut.out : cut.file_prefix) = "\n";
      open_line_.reset();
    }
  }
  send(cut);
}

void OutputSink::append(Cut& cut, std::string_view chunk) {
  if (cut.stamp.empty() && options_.timestamp) {
    cut.stamp = asctime_text(std::time(nullptr));  // one for what one read brought
  }
  if (std::exchange(cut.continues_line, false)) {
    cut.out.append(chunk);
  } else if (options_.prefix == OutputPrefix::kNone) {
    cut.out.append(cut.stamp).append(chunk);
  } else {
    cut.out.append(cut.stamp).append("[");
    if (options_.prefix == OutputPrefix::kHostRank) cut.out.append(cut.worker.host).append(":");
    cut.out.append(cut.worker.label.empty() ? std::to_string(cut.worker.rank) : cut.worker.label);
    cut.out.append(cut.is_err ? "]<stderr>:" : "]<stdout>:").append(chunk);
  }
  if (!is_terminator(chunk.back()) && !cut.open_line) cut.out.push_back('\n');
  if (cut.is_err) {
    auto& tail = cut.worker.tail;
    tail.emplace_back(
        chunk.substr(0, chunk.size() - terminator_length(chunk)).substr(0, kMaxKeptLineBytes));
    while (tail.size() > options_.kept_stderr_lines) tail.pop_front();
  }
}

void OutputSink::send(Cut& cut) {
  if (cut.out.empty() && cut.file_prefix.empty()) return;
  WorkerOutput& worker = cut.worker;
  write_file(worker, cut.is_err, cut.file_prefix);
  write_file(worker, cut.is_err, cut.out);
  if (cut.out.empty() || !shown(worker.rank)) return;
  if (cut.ends_other_line) cut.out.insert(0, 1, '\n');
  console_.write(cut.is_err ? StreamKind::kStderr : StreamKind::kStdout, std::move(cut.out),
                 "rank " + std::to_string(worker.rank) + (cut.is_err ? "'s stderr" : "'s stdout"));
}

bool OutputSink::shown(int rank) const {
  if (options_.ranks_filter.empty()) return true;
  return std::any_of(options_.ranks_filter.begin(), options_.ranks_filter.end(),
                     [rank](const RankRange& r) { return rank >= r.first && rank <= r.last; });
}

const std::deque<std::string>& OutputSink::last_stderr_lines(const WorkerId& id) const {
  return workers_.at(id).tail;
}

}  // namespace hvdrun::launcher
