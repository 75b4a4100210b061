// Timeline (timeline.h). Each event is serialized by Boost.JSON (header-only here: this is
// the one translation unit of the launcher that compiles its sources).
#include "launcher/timeline/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json/src.hpp>
#include <cerrno>
#include <cstring>

#include "hvdrun/error.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

namespace json = boost::json;

json::object args_object(const Timeline::Args& args) {
  json::object out;
  for (const auto& [key, value] : args) out[key] = value;
  return out;
}

}  // namespace

Timeline::Timeline(const std::string& path, std::size_t max_events, Clock::time_point origin)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666)),
      path_(path),
      max_events_(max_events),
      origin_(origin) {
  if (!fd_.valid()) {
    throw UsageError("--timeline " + path + ": cannot create it: " + std::strerror(errno));
  }
  if (const int error = write_all(fd_.get(), "[\n"); error != 0) {
    failed_ = true;
    note("cannot write --timeline " + path + ": " + std::strerror(error));
  }
  good_ = 2;
  name_process(kLauncher, "hvdrun");
  name_thread(kLauncher, 0, "generations and events");
}

Timeline::~Timeline() {
  close();
}

std::int64_t Timeline::micros(Clock::time_point at) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(at - origin_).count();
}

// At most max_events_ events in all, metadata too, the last place kept for the one that says
// what was dropped. Each event is one write; one that fails (a full disk) is cut off again, so
// the file always ends with a whole event.
void Timeline::write(const std::string& event, bool last) {
  if (!fd_.valid() || failed_) return;
  if (!last && written_ + 1 >= max_events_) {
    ++dropped_;
    return;
  }
  ++written_;
  const std::string text = (first_ ? "" : ",\n") + event;
  if (const int error = write_all(fd_.get(), text); error != 0) {
    failed_ = true;
    [[maybe_unused]] const int cut = ::ftruncate(fd_.get(), good_);
    note("cannot write --timeline " + path_ + ": " + std::strerror(error) +
         "; the rest of the timeline is lost (what was written stays loadable)");
    return;
  }
  first_ = false;
  good_ += static_cast<off_t>(text.size());
}

void Timeline::name_process(int pid, const std::string& name) {
  write(json::serialize(json::object{{"ph", "M"},
                                     {"name", "process_name"},
                                     {"pid", pid},
                                     {"tid", 0},
                                     {"args", json::object{{"name", name}}}}));
}

void Timeline::name_thread(int pid, int tid, const std::string& name) {
  write(json::serialize(json::object{{"ph", "M"},
                                     {"name", "thread_name"},
                                     {"pid", pid},
                                     {"tid", tid},
                                     {"args", json::object{{"name", name}}}}));
}

void Timeline::span(int pid, int tid, const std::string& name, const std::string& category,
                    Clock::time_point start, Clock::time_point end, const Args& args) {
  write(
      json::serialize(json::object{{"ph", "X"},
                                   {"name", name},
                                   {"cat", category},
                                   {"pid", pid},
                                   {"tid", tid},
                                   {"ts", micros(start)},
                                   {"dur", std::max<std::int64_t>(0, micros(end) - micros(start))},
                                   {"args", args_object(args)}}));
}

void Timeline::instant(int pid, int tid, const std::string& name, const std::string& category,
                       Clock::time_point at, const Args& args) {
  write(json::serialize(json::object{{"ph", "i"},
                                     {"s", "t"},
                                     {"name", name},
                                     {"cat", category},
                                     {"pid", pid},
                                     {"tid", tid},
                                     {"ts", micros(at)},
                                     {"args", args_object(args)}}));
}

void Timeline::close() {
  if (!fd_.valid()) return;
  if (dropped_ > 0) {
    write(json::serialize(json::object{
              {"ph", "i"},
              {"s", "g"},
              {"name", "timeline capped"},
              {"cat", "hvdrun"},
              {"pid", kLauncher},
              {"tid", 0},
              {"ts", micros(Clock::now())},
              {"args", json::object{{"dropped_events", dropped_}, {"max_events", max_events_}}}}),
          true);
  }
  // Chrome's array format may end without its "]": a file cut short by SIGKILL loads too.
  if (!failed_ && write_all(fd_.get(), "\n]\n") != 0) {
    [[maybe_unused]] const int cut = ::ftruncate(fd_.get(), good_);
  }
  fd_.reset();
}

}  // namespace hvdrun::launcher
