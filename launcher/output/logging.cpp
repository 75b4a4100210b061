// Launcher loggers "launcher", "rdzv", "ssh" and "agents" (pattern "[time] [hvdrun pid] [logger]
// [level] message") and the unprefixed user-facing lines (logging.h).
#include "launcher/output/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <functional>
#include <mutex>

#include "common/logger.h"
#include "launcher/output/console.h"

namespace hvdrun::launcher {
namespace {

constexpr const char* kLoggers[] = {"launcher", "rdzv", "ssh", "agents"};
constexpr const char* kLogPattern = "[%H:%M:%S.%e] [hvdrun %P] [%n] [%l] %v";
constexpr const char* kNotePattern = "hvdrun: %v";

std::shared_ptr<spdlog::logger> note_logger() {
  auto logger = named_logger("note");
  if (logger->level() != spdlog::level::trace) {
    logger->set_pattern(kNotePattern);
    logger->set_level(spdlog::level::trace);
  }
  return logger;
}

// Formatted log lines onto the Console's stderr queue.
class ConsoleLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ConsoleLogSink(Console& console) : console_(console) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t text;
    formatter_->format(message, text);
    console_.write(StreamKind::kStderr, std::string(text.data(), text.size()));
  }
  void flush_() override {}

 private:
  Console& console_;
};

// Gives every launcher logger a sink of its own from `make` (a logger's pattern is its
// sink's) and re-applies the patterns.
void set_sinks(const std::function<spdlog::sink_ptr()>& make, const std::string& level) {
  for (const char* name : kLoggers) named_logger(name)->sinks() = {make()};
  auto note = note_logger();
  note->sinks() = {make()};
  note->set_pattern(kNotePattern);
  setup_logging(level);
}

}  // namespace

void setup_logging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") parsed = spdlog::level::warn;
  for (const char* name : kLoggers) {
    auto logger = named_logger(name);
    logger->set_pattern(kLogPattern);
    logger->set_level(parsed);
  }
}

LogRoute::LogRoute(Console& console, const std::string& level) : level_(level) {
  set_sinks([&console] { return std::make_shared<ConsoleLogSink>(console); }, level_);
}

namespace {

// The notes that still matter while others are held: errors and warnings.
class ErrorsAndWarningsSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ErrorsAndWarningsSink(std::vector<spdlog::sink_ptr> to) : to_(std::move(to)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    const std::string_view text(message.payload.data(), message.payload.size());
    if (!text.starts_with("error") && !text.starts_with("warning")) return;
    for (const auto& to : to_) to->log(message);
  }
  void flush_() override {
    for (const auto& to : to_) to->flush();
  }

 private:
  std::vector<spdlog::sink_ptr> to_;
};

}  // namespace

NoteHold::NoteHold() : held_(note_logger()->sinks()) {
  note_logger()->sinks() = {std::make_shared<ErrorsAndWarningsSink>(held_)};
}

NoteHold::~NoteHold() {
  note_logger()->sinks() = held_;
}

LogRoute::~LogRoute() {
  set_sinks([] { return std::make_shared<spdlog::sinks::stderr_sink_mt>(); }, level_);
}

std::shared_ptr<spdlog::logger> launcher_log() {
  return named_logger("launcher");
}

void note(const std::string& text) {
  note_logger()->info("{}", text);
}

std::string millis_since(std::chrono::steady_clock::time_point start) {
  return millis(std::chrono::steady_clock::now() - start);
}

std::string millis(std::chrono::steady_clock::duration elapsed) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(us) / 1000.0);
  return text;
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string some_of(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > 3) text += " and " + std::to_string(names.size() - 3) + " more";
  return text;
}

}  // namespace hvdrun::launcher
