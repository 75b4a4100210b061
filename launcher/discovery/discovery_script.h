// The --host-discovery-script, run on the io thread: `/bin/sh -c SCRIPT` with stdin on
// /dev/null, the launcher's environment, stdout captured (at most 1 MiB) and parsed as
// parse_discovery_output() reads it, stderr kept (its last 4 KiB) for the failure message.
// A run that exits non-zero, dies by a signal, prints too much, prints garbage or outlives
// its timeout (its process group is then SIGKILLed) is a failure, described in one line that
// names the script. Its output is what came until its pipes closed, or until 0.5 s after it
// exited (a process it left in another session may hold them open). The output (up to 1 MiB,
// some 75,000 hosts) is parsed on a thread of the runner's own, not on the io thread.
// One run at a time; destroying the runner kills a running script and waits for its parse.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/process_end.h"
#include "launcher/process/watchdog.h"
#include "launcher/spec/job_spec.h"

namespace hvdrun::launcher {

struct DiscoveryResult {
  std::vector<HostSpec> hosts;  // when error is empty
  std::string error;            // non-empty: the run failed, and why
  std::string note{};           // what the refinement of run() had to say, if anything
};

class DiscoveryScript {
 public:
  DiscoveryScript(boost::asio::io_context& io, Watchdog& watchdog, const ElasticSpec& spec,
                  const std::map<std::string, std::string>& environment);
  ~DiscoveryScript();
  DiscoveryScript(const DiscoveryScript&) = delete;
  DiscoveryScript& operator=(const DiscoveryScript&) = delete;

  // Starts a run; `done` is called on the io thread once it ended (never from inside run()).
  // `refine`, if given, runs on the parse thread after a parse that worked (it must be safe
  // there). Ignored while a run is under way.
  using Refine = std::function<void(DiscoveryResult&)>;
  void run(std::function<void(DiscoveryResult)> done, Refine refine = {});
  bool running() const noexcept { return run_ != nullptr; }
  // Kills a running script; its `done` is not called.
  void cancel();

 private:
  struct Run;
  void watch_exit();
  void exited(ProcessEnd end);
  void read(bool out);
  void maybe_done();

  boost::asio::io_context& io_;
  Watchdog& watchdog_;
  const ElasticSpec& spec_;
  std::vector<std::string> env_;
  std::unique_ptr<Run> run_;
  // Expires at cancel() and destruction: a parse that ends then calls no `done`.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
  boost::asio::thread_pool parser_{1};  // last: joined first
};

}  // namespace hvdrun::launcher
