// Output throughput through a launcher, both ends of it:
//   output_bench write LINES BYTES
//     a worker: writes LINES lines of BYTES bytes each (newline included) to stdout, fully
//     buffered as a program's stdout on a pipe is: "hvdout RANK INDEX ", 'x' up to BYTES - 2
//     bytes, then "|". Its rank comes from HOROVOD_RANK, OMPI_COMM_WORLD_RANK or RANK,
//     whichever is set first.
//   output_bench read RANKS LINES BYTES
//     the reader of the launcher's stdout: checks every line whole, each rank's lines in
//     order, and each under its own rank's prefix (the last number in what the launcher put
//     before "hvdout", if anything), and prints "lines L intact I torn T missing M
//     out_of_order O mislabelled W bytes B stream_ms S mb_per_s R"
//     (stream_ms: from the first byte read to the read that completed the last line, so that
//     a launcher's own shutdown is not counted; bytes: all it read, prefixes included;
//     mb_per_s: the workers' bytes, prefixes excluded, over stream_ms).
//     Exits 1 if a line is torn, missing, out of order or mislabelled.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench/number.h"

namespace {

using hvdrun::bench::number;

constexpr std::string_view kMarker = "hvdout ";

int rank_from_environment() {
  for (const char* name : {"HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "RANK"}) {
    if (const char* value = std::getenv(name)) return static_cast<int>(number(value, name, 0));
  }
  throw std::runtime_error("no rank: none of HOROVOD_RANK, OMPI_COMM_WORLD_RANK, RANK is set");
}

int write_lines(long long lines, long long bytes) {
  const int rank = rank_from_environment();
  std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);  // a buffer stdio allocates and keeps
  std::string line;
  for (long long i = 0; i < lines; ++i) {
    line = std::string(kMarker) + std::to_string(rank) + " " + std::to_string(i) + " ";
    if (static_cast<long long>(line.size()) + 2 > bytes) {
      throw std::runtime_error("BYTES " + std::to_string(bytes) + " is too short for a line");
    }
    line.append(static_cast<std::size_t>(bytes) - line.size() - 2, 'x');
    line += "|\n";
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size()) return 1;
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

struct Tally {
  std::vector<long long> next;  // per rank: the index its next line must carry
  long long lines = 0, intact = 0, torn = 0, out_of_order = 0, mislabelled = 0, bytes = 0;
};

// The rank a launcher's prefix names: its last number ("[3]<stdout>:", "[1,3]<stdout>:",
// "[default3]:", a time stamp first or not); -1 for a prefix without one.
long long prefix_rank(std::string_view prefix) {
  const auto last = prefix.find_last_of("0123456789");
  if (last == std::string_view::npos) return -1;
  const auto before = prefix.find_last_not_of("0123456789", last);
  const std::size_t start = before == std::string_view::npos ? 0 : before + 1;
  const std::string_view digits = prefix.substr(start, last + 1 - start);
  long long rank = -1;
  std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  return rank;
}

// One line without its newline; anything before the marker is the launcher's prefix.
void check(std::string_view line, long long want_bytes, Tally& t) {
  ++t.lines;
  const auto at = line.find(kMarker);
  if (at == std::string_view::npos) return void(++t.torn);
  const std::string_view body = line.substr(at);
  const auto first = body.find(' ', kMarker.size());
  const auto second = first == std::string_view::npos ? first : body.find(' ', first + 1);
  const bool whole = second != std::string_view::npos &&
                     static_cast<long long>(body.size()) + 1 == want_bytes && body.back() == '|' &&
                     body.find_first_not_of('x', second + 1) == body.size() - 1;
  if (!whole) return void(++t.torn);
  long long rank = 0, index = 0;
  const auto digits = [](std::string_view s, long long& v) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size();
  };
  if (!digits(body.substr(kMarker.size(), first - kMarker.size()), rank) ||
      !digits(body.substr(first + 1, second - first - 1), index) || rank < 0 ||
      rank >= static_cast<long long>(t.next.size())) {
    return void(++t.torn);
  }
  // A line under another rank's prefix is mislabelled (a plain pipe has no prefix).
  if (at > 0 && prefix_rank(line.substr(0, at)) != rank) ++t.mislabelled;
  if (index != t.next[static_cast<std::size_t>(rank)]) ++t.out_of_order;
  t.next[static_cast<std::size_t>(rank)] = index + 1;
  ++t.intact;
}

int read_lines(long long ranks, long long lines, long long bytes) {
  using Clock = std::chrono::steady_clock;
  Tally t;
  t.next.assign(static_cast<std::size_t>(ranks), 0);
  std::vector<char> block(1 << 18);
  std::string partial;
  Clock::time_point first{}, last{};
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, block.data(), block.size());
    if (got < 0) throw std::runtime_error("reading stdin failed");
    if (got == 0) break;
    if (t.bytes == 0) first = Clock::now();
    t.bytes += got;
    std::string_view data(block.data(), static_cast<std::size_t>(got));
    if (data.find('\n') != std::string_view::npos) last = Clock::now();
    for (auto nl = data.find('\n'); nl != std::string_view::npos; nl = data.find('\n')) {
      if (partial.empty()) {
        check(data.substr(0, nl), bytes, t);
      } else {
        partial.append(data.substr(0, nl));
        check(partial, bytes, t);
        partial.clear();
      }
      data.remove_prefix(nl + 1);
    }
    partial.append(data);
  }
  if (!partial.empty()) {
    check(partial, bytes, t);
    last = Clock::now();
  }
  const double ms =
      t.bytes == 0 ? 0 : std::chrono::duration<double, std::milli>(last - first).count();
  const long long missing = std::max(0LL, ranks * lines - t.intact);
  const double payload = static_cast<double>(t.intact) * static_cast<double>(bytes);
  std::printf(
      "lines %lld intact %lld torn %lld missing %lld out_of_order %lld mislabelled %lld "
      "bytes %lld stream_ms %.1f mb_per_s %.1f\n",
      t.lines, t.intact, t.torn, missing, t.out_of_order, t.mislabelled, t.bytes, ms,
      ms > 0 ? payload / 1e6 / (ms / 1e3) : 0.0);
  return t.torn == 0 && missing == 0 && t.out_of_order == 0 && t.mislabelled == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.size() == 3 && args[0] == "write") {
      return write_lines(number(args[1], "LINES", 0), number(args[2], "BYTES", 0));
    }
    if (args.size() == 4 && args[0] == "read") {
      return read_lines(number(args[1], "RANKS", 0), number(args[2], "LINES", 0),
                        number(args[3], "BYTES", 0));
    }
    std::fprintf(stderr,
                 "usage: output_bench write LINES BYTES | output_bench read RANKS LINES BYTES\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "output_bench: %s\n", e.what());
    return 2;
  }
}
