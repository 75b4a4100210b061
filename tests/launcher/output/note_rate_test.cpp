// NoteRate: a flood of one kind of note is the first at once, then at most one an interval
// saying how many were held, and flush() says the latest held one.
#include "launcher/output/note_rate.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/logger.h"

namespace hvdrun::launcher {
namespace {

using namespace std::chrono_literals;

// The notes said while it lives, without the "hvdrun: " the note logger's pattern may add.
class NotesSaid {
 public:
  NotesSaid() {
    sink_->set_pattern("%v");
    named_logger("note")->sinks().push_back(sink_);
  }
  ~NotesSaid() { named_logger("note")->sinks().pop_back(); }
  NotesSaid(const NotesSaid&) = delete;
  NotesSaid& operator=(const NotesSaid&) = delete;

  std::vector<std::string> lines() const {
    std::vector<std::string> lines = sink_->last_formatted();
    for (auto& line : lines) {
      if (line.ends_with('\n')) line.pop_back();
      if (line.starts_with("hvdrun: ")) line.erase(0, 8);
    }
    return lines;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
};

TEST(NoteRate, TheFirstIsSaidAtOnceThenOneAnIntervalWithHowManyWereHeld) {
  const NotesSaid said;
  NoteRate rate(1s);
  const auto t0 = NoteRate::Clock::now();
  rate.note("usr1", "forwarded 1", t0);
  rate.note("usr1", "forwarded 2", t0 + 100ms);
  rate.note("other", "something else", t0 + 150ms);  // a kind of its own
  rate.note("usr1", "forwarded 3", t0 + 200ms);
  rate.note("usr1", "forwarded 4", t0 + 1100ms);  // an interval after the last said
  rate.note("usr1", "forwarded 5", t0 + 1200ms);
  rate.note("usr1", "forwarded 6", t0 + 1300ms);
  rate.flush();
  const std::vector<std::string> expected = {
      "forwarded 1",
      "something else",
      "forwarded 4 (and 2 more like it since the last such line)",
      "forwarded 6 (and 1 more like it since the last such line)",
  };
  EXPECT_EQ(said.lines(), expected);
}

// Of a flood whose signals the kernel merged into two, the second is the flush's: it is said
// alone, for nothing else was held.
TEST(NoteRate, AFlushOfOneHeldNoteSaysItAlone) {
  const NotesSaid said;
  NoteRate rate(1s);
  const auto t0 = NoteRate::Clock::now();
  rate.note("usr1", "forwarded 1", t0);
  rate.note("usr1", "forwarded 2", t0 + 10ms);
  rate.flush();
  rate.flush();  // nothing held any more
  const std::vector<std::string> expected = {"forwarded 1", "forwarded 2"};
  EXPECT_EQ(said.lines(), expected);
}

}  // namespace
}  // namespace hvdrun::launcher
