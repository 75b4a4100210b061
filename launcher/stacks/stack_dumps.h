// StackDumps: a job's collections of its ranks' stacks (on Ctrl-\, before a stall or the start
// timeout ends the job, before a lost rank is killed, at a Ctrl-C during a stall). One at a
// time: this machine's ranks by the StackCollector, the remote ones from their agents, for at
// most kStacksWait; every rank's stacks in its file, the culprits' top frames said. It owns the
// Python hook's directory the job's workers write their Python frames to. io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/plan/worker_id.h"
#include "launcher/stacks/python_hook.h"
#include "launcher/stacks/stack_collector.h"

namespace hvdrun::launcher {

class StackDumps {
 public:
  using Clock = std::chrono::steady_clock;
  // How long the stacks may take to come, from this machine's tools and the remote agents.
  static constexpr std::chrono::milliseconds kStacksWait{15000};

  struct Request {
    std::string why;                         // "SIGQUIT from pid 12", "stall"
    std::vector<int> culprits;               // whose top frames are said (every rank's if none)
    std::vector<StackTarget> local;          // this machine's running ranks
    std::map<WorkerId, std::string> remote;  // asked of their agents: "rank 3 (host h1)"
  };
  // A collection ended: why, when it began, how many ranks' stacks came.
  using Collected =
      std::function<void(const std::string& why, Clock::time_point start, std::size_t ranks)>;

  // `out_dir`: the rank files (made on first use).
  StackDumps(boost::asio::io_context& io, std::filesystem::path out_dir, Collected collected);
  StackDumps(const StackDumps&) = delete;
  StackDumps& operator=(const StackDumps&) = delete;

  // Where the workers' Python hook is (python_hook.h), and why there is none if it failed.
  const std::filesystem::path& hook_dir() const noexcept { return hook_dir_.path(); }
  const std::string& hook_error() const noexcept { return hook_dir_.error(); }

  // A collection is under way (a new one is refused with a note).
  bool busy() const noexcept { return dump_.has_value(); }
  // Starts `request`'s collection; `then` once it ended, or at once (with a note) when one is
  // under way or no rank runs.
  void collect(Request request, std::function<void()> then);
  // A remote rank's stacks from its agent: its file, and the collection goes on (ignored when
  // late or not asked for).
  void remote_came(const WorkerId& id, RankStacks stacks);
  // The ranks a stall now waits on (none: no stall), until the next check: a Ctrl-\ shows
  // theirs first, a Ctrl-C collects theirs before the ranks stop.
  void suspect(std::optional<std::vector<int>> ranks) { suspects_ = std::move(ranks); }
  const std::optional<std::vector<int>>& suspects() const noexcept { return suspects_; }
  // The job ends: no more waiting for stacks.
  void cancel() { timer_.cancel(); }

 private:
  struct Dump {
    std::string why;
    std::vector<int> culprits;
    std::function<void()> then;
    Clock::time_point start;
    bool local_pending = false;
    std::map<WorkerId, std::string> remote_pending;
    std::vector<RankStacks> stacks;
  };
  void finish_if_complete();
  void finish();
  void print(const std::string& why, const std::vector<RankStacks>& stacks,
             const std::vector<int>& culprits) const;

  PythonHookDir hook_dir_;  // before collector_, which reads it
  StackCollector collector_;
  Collected collected_;
  std::optional<Dump> dump_;
  std::optional<std::vector<int>> suspects_;
  boost::asio::steady_timer timer_;
};

}  // namespace hvdrun::launcher
