// The job's hang forensics (job.h): every second, what the members of the running generation
// last said of their collectives (stall_check.h); a stall is said once, and ends the job after
// --stall-shutdown. The ranks' stacks (stack_collector.h): on SIGQUIT, before a stall ends the
// job, before the start timeout does, and at a Ctrl-C during a stall.
#include "common/duration_text.h"
#include "launcher/job/job.h"
#include "launcher/output/logging.h"
#include "launcher/stacks/stack_text.h"

namespace hvdrun::launcher {
namespace {

constexpr auto kStallCheckInterval = std::chrono::seconds(1);
constexpr std::size_t kShownRanks = 8;   // ranks whose top frames are printed
constexpr std::size_t kShownFrames = 8;  // per rank (Python: per thread, 2 threads at most)

}  // namespace

void Job::watch_stalls() {
  if (spec_.stall_timeout.count() == 0 && !spec_.stall_shutdown) return;
  stall_timer_.expires_after(kStallCheckInterval);
  stall_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_.is(JobState::kFinished)) return;
    check_stalls();
    watch_stalls();
  });
}

void Job::check_stalls() {
  stall_.reset();
  if (!state_.is(JobState::kRunning) || stall_shutting_down_) return;
  auto timeout = spec_.stall_timeout;
  if (spec_.stall_shutdown && (timeout.count() == 0 || *spec_.stall_shutdown < timeout)) {
    timeout = *spec_.stall_shutdown;
  }
  stall_ = find_stall(faces_.progress(), timeout);
  if (!stall_) return;
  const std::pair key{faces_.generation(), stall_->sequence};
  if (spec_.stall_shutdown && stall_->waited >= *spec_.stall_shutdown) {
    stall_shutting_down_ = true;
    const std::string reason = "stalled: " + stall_->describe() + " (--stall-shutdown " +
                               describe_duration(*spec_.stall_shutdown) + ")";
    dump_stacks("stall", stall_->culprits(), [this, reason] {
      if (state_.is(JobState::kRunning)) fail_for(reason);
    });
    return;
  }
  if (stall_reported_ == key || spec_.stall_timeout.count() == 0) return;
  stall_reported_ = key;
  note("warning: stall: " + stall_->describe());
}

void Job::dump_stacks(const std::string& why, const std::vector<int>& culprits,
                      std::function<void()> then) {
  std::vector<StackTarget> targets;
  for (const auto& [id, pid] : pools_.local_pids()) {
    const WorkerRecord* record = workers_.find(id);
    if (!record || record->end()) continue;
    targets.push_back({record->slot().rank, record->slot().host, pid});
  }
  std::sort(targets.begin(), targets.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  const std::size_t count = targets.size();
  const auto start = Clock::now();
  const bool started =
      count > 0 &&
      stacks_.collect(std::move(targets), [this, why, culprits, then, start](auto stacks) {
        print_stacks(why + ") collected in " + millis_since(start), stacks, culprits);
        if (then) then();
      });
  if (started) return;
  note(count == 0 ? "no stacks (" + why + "): no rank runs on this machine"
                  : "no stacks (" + why + "): a collection is under way");
  if (then) then();
}

void Job::print_stacks(const std::string& why, const std::vector<RankStacks>& stacks,
                       const std::vector<int>& culprits) const {
  note("stacks of " + plural(stacks.size(), "rank") + " (" + why + ", written to " +
       stacks_.out_dir().string() + "/rank.<R>.txt");
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
