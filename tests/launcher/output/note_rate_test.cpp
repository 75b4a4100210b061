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

// A flood of forwarded signals told to one NoteRate of a 1 s interval, at times of the test's
// choosing, and the notes it said.
class NoteRateFlood : public ::testing::Test {
 protected:
  // Forwarded signal `n` (its note's kind is "usr1"), `after` the flood's start.
  void forwarded(int n, std::chrono::milliseconds after) {
    rate_.note("usr1", "forwarded " + std::to_string(n), t0_ + after);
  }

  const NotesSaid said_;
  NoteRate rate_{1s};
  const NoteRate::Clock::time_point t0_ = NoteRate::Clock::now();
};

TEST_F(NoteRateFlood, TheFirstIsSaidAtOnceThenOneAnIntervalWithHowManyWereHeld) {
  forwarded(1, 0ms);
  forwarded(2, 100ms);
  rate_.note("other", "something else", t0_ + 150ms);  // a kind of its own
  forwarded(3, 200ms);
  forwarded(4, 1100ms);  // an interval after the last said
  forwarded(5, 1200ms);
  forwarded(6, 1300ms);
  rate_.flush();
  const std::vector<std::string> expected = {
      "forwarded 1",
      "something else",
      "forwarded 4 (and 2 more like it since the last such line)",
      "forwarded 6 (and 1 more like it since the last such line)",
  };
  EXPECT_EQ(said_.lines(), expected);
}

// Of a flood whose signals the kernel merged into two, the second is the flush's: it is said
// alone, for nothing else was held.
TEST_F(NoteRateFlood, AFlushOfOneHeldNoteSaysItAlone) {
  forwarded(1, 0ms);
  forwarded(2, 10ms);
  rate_.flush();
  rate_.flush();  // nothing held any more
  const std::vector<std::string> expected = {"forwarded 1", "forwarded 2"};
  EXPECT_EQ(said_.lines(), expected);
}

}  // namespace
}  // namespace hvdrun::launcher
