// The job's hang forensics (job.h): every second, what the members of the running generation
// last said of their collectives (stall_check.h); a stall is said once, and ends the job after
// --stall-shutdown; the straggler report (the samples: job_stragglers.cpp). The ranks' stacks
// (stack_collector.h): on SIGQUIT, before a stall ends the job, before the start timeout does, and
// at a Ctrl-C during a stall.
#include "common/duration_text.h"
#include "launcher/job/job.h"
#include "launcher/output/logging.h"
#include "launcher/stacks/stack_text.h"

namespace hvdrun::launcher {
namespace {

constexpr auto kStallCheckInterval = std::chrono::seconds(1);
constexpr std::size_t kShownRanks = 8;   // ranks whose top frames are printed
constexpr std::size_t kShownFrames = 8;  // per rank (Python: per thread, 2 threads at most)
// How long the stacks may take to come, from this machine's tools and the remote agents.
constexpr std::chrono::milliseconds kStacksWait{15000};

}  // namespace

// Every second: the members' timed collectives (told to the components), the Horovod spares'
// queries, the stall check, then the components' tick.
void Job::watch_progress() {
  stall_timer_.expires_after(kStallCheckInterval);
  stall_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_.is(JobState::kFinished)) return;
    take_samples();
    if (spares_.running() > 0) check_horovod_spares();
    if (spec_.stall_timeout.count() != 0 || spec_.stall_shutdown) check_stalls();
    publish(&JobEvents::tick);
    watch_progress();
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
      if (!state_.is(JobState::kRunning)) return;
      carry_out(policy_->limit_reached(Limit::kStallShutdown, reason, facts()), nullptr);
    });
    return;
  }
  if (stall_reported_ == key || spec_.stall_timeout.count() == 0) return;
  stall_reported_ = key;
  event_happened("stall", {{"what", stall_->describe()}});
  note("warning: stall: " + stall_->describe());
}

void Job::dump_stacks(const std::string& why, const std::vector<int>& culprits,
                      std::function<void()> then) {
  if (dump_) {
    note("no stacks (" + why + "): a collection is under way");
    if (then) then();
    return;
  }
  std::vector<StackTarget> targets;
  for (const auto& [id, pid] : pools_.local_pids()) {
    const WorkerRecord* record = workers_.find(id);
    if (!record || record->end()) continue;
    targets.push_back({record->slot().rank, record->slot().host, pid});
  }
  StackDump dump{why, culprits, std::move(then), Clock::now(), !targets.empty(), {}, {}};
  for (const auto& id : pools_.request_remote_stacks()) dump.remote_pending.insert(id);
  if (!dump.local_pending && dump.remote_pending.empty()) {
    note("no stacks (" + why + "): no rank runs");
    if (dump.then) dump.then();
    return;
  }
  dump_ = std::move(dump);
  if (dump_->local_pending) {
    dump_->local_pending =
        stacks_.collect(std::move(targets), [this](std::vector<RankStacks> stacks) {
          if (!dump_) return;  // the wait ended first: their files are written all the same
          dump_->local_pending = false;
          for (auto& s : stacks) dump_->stacks.push_back(std::move(s));
          finish_dump_if_complete();
        });
  }
  dump_timer_.expires_after(kStacksWait);
  dump_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && dump_) finish_dump();
  });
}

// A remote worker's stacks, from its host's agent: its rank's file, and the dump goes on.
void Job::remote_stacks(const WorkerId& id, agent::StacksFrame frame) {
  if (!dump_ || !dump_->remote_pending.erase(id)) return;  // late, or not asked for
  const WorkerRecord* record = workers_.find(id);
  RankStacks r;
  r.target = {record ? record->slot().rank : -1, pools_.host_name(id.host), frame.pid};
  r.python = std::move(frame.python);
  r.native = std::move(frame.native);
  r.note = std::move(frame.note);
  append_stacks_file(r, stacks_.out_dir());
  dump_->stacks.push_back(std::move(r));
  finish_dump_if_complete();
}

void Job::finish_dump_if_complete() {
  if (dump_ && !dump_->local_pending && dump_->remote_pending.empty()) finish_dump();
}

void Job::finish_dump() {
  dump_timer_.cancel();
  StackDump dump = std::move(*dump_);
  dump_.reset();
  std::sort(dump.stacks.begin(), dump.stacks.end(),
            [](const auto& a, const auto& b) { return a.target.rank < b.target.rank; });
  print_stacks(dump.why + ") collected in " + millis_since(dump.start), dump.stacks, dump.culprits);
  publish(&JobEvents::stacks_collected, dump.why, dump.start, dump.stacks.size());
  if (!dump.remote_pending.empty()) {
    std::string missing;
    for (const auto& id : dump.remote_pending) {
      const WorkerRecord* record = workers_.find(id);
      if (!missing.empty()) missing += ", ";
      missing += (record ? "rank " + std::to_string(record->slot().rank) : std::string("a rank")) +
                 " (host " + pools_.host_name(id.host) + ")";
    }
    note("no stacks came within " + describe_duration(kStacksWait) + " from " + missing);
  }
  if (dump.then) dump.then();
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
