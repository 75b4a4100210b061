// Timeline: the job's life as a trace that Perfetto (ui.perfetto.dev) and chrome://tracing open
// (--timeline FILE): a JSON array of Chrome trace events, written as they happen. Tracks: the
// launcher's own (generations: when each started, formed and why it ended; failures, signals,
// stalls, stack collections), one per host (its connection), one per worker on its host (its
// life from start to end). Bounded: the file holds at most --timeline-max-events events, track
// names included; the rest are counted and the last event says how many were dropped. Every
// event is written whole: a job that hvdrun could not close (SIGKILL) leaves the array
// unterminated, which both viewers still read, and a write that fails (a full disk) is cut off
// again, the file ending with the last whole event. io thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.h"

namespace hvdrun::launcher {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  using Args = std::vector<std::pair<std::string, std::string>>;
  static constexpr int kLauncher = 0;  // the launcher's track (pid); hosts are 1 + their index

  // Creates (truncates) `path`; UsageError naming it when that fails. Times are from `origin`.
  Timeline(const std::string& path, std::size_t max_events, Clock::time_point origin);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Names a track: a process (pid) or a thread of it (tid).
  void name_process(int pid, const std::string& name);
  void name_thread(int pid, int tid, const std::string& name);
  // Something that lasted from `start` to `end` on a track.
  void span(int pid, int tid, const std::string& name, const std::string& category,
            Clock::time_point start, Clock::time_point end, const Args& args = {});
  // Something that happened at `at`.
  void instant(int pid, int tid, const std::string& name, const std::string& category,
               Clock::time_point at, const Args& args = {});
  // Says what was dropped and ends the array; later calls write nothing.
  void close();

  std::size_t written() const noexcept { return written_; }
  std::size_t dropped() const noexcept { return dropped_; }

 private:
  // `last`: the event that says what was dropped, written into the place kept for it.
  void write(const std::string& event, bool last = false);
  std::int64_t micros(Clock::time_point at) const;

  UniqueFd fd_;
  std::string path_;
  std::size_t max_events_;
  Clock::time_point origin_;
  std::size_t written_ = 0;
  std::size_t dropped_ = 0;
  bool first_ = true;
  bool failed_ = false;
  off_t good_ = 0;  // the file's size up to the last whole event
};

}  // namespace hvdrun::launcher
