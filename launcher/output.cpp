// LineSplitter and OutputSink (output.h): prefixing, tee files and the stderr tails kept for
// the failure summary.
#include "launcher/output.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "hvdrun/error.h"

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kMaxKeptLineBytes = 1000;
constexpr int kConsoleBlockedTimeoutMs = 1000;

bool is_terminator(char c) {
  return c == '\n' || c == '\r';
}

std::size_t terminator_length(std::string_view chunk) {
  if (chunk.ends_with("\r\n")) return 2;
  return !chunk.empty() && is_terminator(chunk.back()) ? 1 : 0;
}

// Writes every byte of `parts` to fd (one loop over partial writes and EINTR). A console
// in non-blocking mode is waited for, bounded; any other error drops the rest. Returns 0 or
// the errno of the failed write.
int write_all(int fd, std::array<iovec, 3> parts, int count) {
  iovec* iov = parts.data();
  while (count > 0) {
    ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      pollfd pfd{fd, POLLOUT, 0};
      if (errno == EAGAIN && ::poll(&pfd, 1, kConsoleBlockedTimeoutMs) > 0) continue;
      return errno;
    }
    auto left = static_cast<std::size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

UniqueFd open_tee_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    throw UsageError("cannot open --output-filename file '" + path.string() +
                     "': " + std::strerror(errno));
  }
  return fd;
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

OutputSink::OutputSink(OutputOptions options) : options_(std::move(options)) {
  if (!options_.directory) return;
  std::error_code ec;
  std::filesystem::create_directories(*options_.directory, ec);
  if (ec) {
    throw UsageError("cannot create --output-filename directory '" + *options_.directory +
                     "': " + ec.message());
  }
}

void OutputSink::add_worker(const WorkerId& id, int rank) {
  auto& entry = workers_[id];
  entry.rank = rank;
  if (!options_.directory) return;
  namespace fs = std::filesystem;
  fs::path dir = fs::path(*options_.directory) / rank_directory_name(rank, options_.num_proc);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw UsageError("cannot create --output-filename directory '" + dir.string() +
                     "': " + ec.message());
  }
  entry.files[0] = open_tee_file(dir / "stdout");
  entry.files[1] = open_tee_file(dir / "stderr");
}

void OutputSink::write(const WorkerId& id, StreamKind stream, std::string_view chunk) {
  if (chunk.empty()) return;
  auto& worker = workers_.at(id);
  bool is_err = stream == StreamKind::kStderr;
  std::string prefix = options_.timestamp ? asctime_text(std::time(nullptr)) : std::string();
  prefix += "[" + std::to_string(worker.rank) + (is_err ? "]<stderr>:" : "]<stdout>:");
  static constexpr char kNewline[] = "\n";
  std::array<iovec, 3> parts{iovec{prefix.data(), prefix.size()},
                             iovec{const_cast<char*>(chunk.data()), chunk.size()},
                             iovec{const_cast<char*>(kNewline), 1}};
  int count = is_terminator(chunk.back()) ? 2 : 3;
  bool& closed = console_closed_[is_err ? 1 : 0];
  if (!closed &&
      write_all(is_err ? options_.stderr_fd : options_.stdout_fd, parts, count) == EPIPE) {
    closed = true;
  }
  if (const auto& file = worker.files[is_err ? 1 : 0]; file.get() >= 0) {
    write_all(file.get(), parts, count);
  }
  if (is_err) {
    std::string_view line = chunk.substr(0, chunk.size() - terminator_length(chunk));
    worker.tail.emplace_back(line.substr(0, kMaxKeptLineBytes));
    while (worker.tail.size() > options_.kept_stderr_lines) worker.tail.pop_front();
  }
}

const std::deque<std::string>& OutputSink::last_stderr_lines(const WorkerId& id) const {
  return workers_.at(id).tail;
}

}  // namespace hvdrun::launcher
