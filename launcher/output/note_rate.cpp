// NoteRate (note_rate.h).
#include "launcher/output/note_rate.h"

#include "launcher/output/logging.h"

namespace hvdrun::launcher {

void NoteRate::say(Kind& kind, const std::string& text, Clock::time_point now) {
  std::string line = text;
  if (kind.held > 0) {
    line += " (and " + std::to_string(kind.held) + " more like it since the last such line)";
  }
  launcher::note(line);
  kind.said = now;
  kind.held = 0;
}

void NoteRate::note(const std::string& kind_name, const std::string& text, Clock::time_point now) {
  auto [it, first] = kinds_.try_emplace(kind_name);
  Kind& kind = it->second;
  if (first || now - kind.said >= interval_) return say(kind, text, now);
  ++kind.held;
  kind.latest = text;
}

void NoteRate::flush() {
  for (auto& [name, kind] : kinds_) {
    if (kind.held == 0) continue;
    --kind.held;  // the latest is said itself
    say(kind, kind.latest, Clock::now());
  }
}

}  // namespace hvdrun::launcher
