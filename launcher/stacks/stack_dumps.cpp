// StackDumps (stack_dumps.h).
#include "launcher/stacks/stack_dumps.h"

#include <algorithm>

#include "common/duration_text.h"
#include "launcher/output/logging.h"
#include "launcher/stacks/stack_text.h"

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kShownRanks = 8;   // ranks whose top frames are printed
constexpr std::size_t kShownFrames = 8;  // per rank (Python: per thread, 2 threads at most)

}  // namespace

StackDumps::StackDumps(boost::asio::io_context& io, std::filesystem::path out_dir,
                       Collected collected)
    : collector_(io, hook_dir_.path(), std::move(out_dir)),
      collected_(std::move(collected)),
      timer_(io) {}

void StackDumps::collect(Request request, std::function<void()> then) {
  if (dump_) {
    note("no stacks (" + request.why + "): a collection is under way");
    if (then) then();
    return;
  }
  if (request.local.empty() && request.remote.empty()) {
    note("no stacks (" + request.why + "): no rank runs");
    if (then) then();
    return;
  }
  dump_.emplace(Dump{std::move(request.why),
                     std::move(request.culprits),
                     std::move(then),
                     Clock::now(),
                     !request.local.empty(),
                     std::move(request.remote),
                     {}});
  if (dump_->local_pending) {
    dump_->local_pending =
        collector_.collect(std::move(request.local), [this](std::vector<RankStacks> stacks) {
          if (!dump_) return;  // the wait ended first: their files are written all the same
          dump_->local_pending = false;
          for (auto& s : stacks) dump_->stacks.push_back(std::move(s));
          finish_if_complete();
        });
  }
  timer_.expires_after(kStacksWait);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && dump_) finish();
  });
}

void StackDumps::remote_came(const WorkerId& id, RankStacks stacks) {
  if (!dump_ || !dump_->remote_pending.erase(id)) return;  // late, or not asked for
  append_stacks_file(stacks, collector_.out_dir());
  dump_->stacks.push_back(std::move(stacks));
  finish_if_complete();
}

void StackDumps::finish_if_complete() {
  if (dump_ && !dump_->local_pending && dump_->remote_pending.empty()) finish();
}

void StackDumps::finish() {
  timer_.cancel();
  Dump dump = std::move(*dump_);
  dump_.reset();
  std::sort(dump.stacks.begin(), dump.stacks.end(),
            [](const auto& a, const auto& b) { return a.target.rank < b.target.rank; });
  print(dump.why + ") collected in " + millis_since(dump.start), dump.stacks, dump.culprits);
  if (collected_) collected_(dump.why, dump.start, dump.stacks.size());
  if (!dump.remote_pending.empty()) {
    std::string missing;
    for (const auto& [id, label] : dump.remote_pending) {
      if (!missing.empty()) missing += ", ";
      missing += label;
    }
    note("no stacks came within " + describe_duration(kStacksWait) + " from " + missing);
  }
  if (dump.then) dump.then();
}

// `why`: "SIGQUIT from pid 12) collected in 180 ms", the note's parenthesis left open.
void StackDumps::print(const std::string& why, const std::vector<RankStacks>& stacks,
                       const std::vector<int>& culprits) const {
  note("stacks of " + plural(stacks.size(), "rank") + " (" + why + ", written to " +
       collector_.out_dir().string() + "/rank.<R>.txt");
  std::size_t shown = 0;
  for (const auto& s : stacks) {
    const bool culprit = culprits.empty() || std::find(culprits.begin(), culprits.end(),
                                                       s.target.rank) != culprits.end();
    if (!culprit) continue;
    if (shown++ == kShownRanks) {
      note("(the other ranks' stacks are in their files)");
      break;
    }
    std::string text = "rank " + std::to_string(s.target.rank) + " (host " + s.target.host +
                       ", pid " + std::to_string(s.target.pid) + "), top of its stack:";
    auto lines = python_top_frames(s.python, kShownFrames, 2);
    if (lines.empty()) lines = main_thread_frames(s.native, s.target.pid, kShownFrames);
    for (const auto& line : lines) text += "\n    " + line;
    if (lines.empty()) text += "\n    " + (s.note.empty() ? "no frames" : s.note);
    note(text);
  }
}

}  // namespace hvdrun::launcher
