// The --host-discovery-script, run on the io thread: `/bin/sh -c SCRIPT` with stdin on
// /dev/null, the launcher's environment, stdout captured (at most 1 MiB) and parsed as
// parse_discovery_output() reads it, stderr kept (its last 4 KiB) for the failure message.
// A run that exits non-zero, dies by a signal, prints too much, prints garbage or outlives
// its timeout (its process group is then SIGKILLed) is a failure, described in one line that
// names the script. Its output is what came until its pipes closed, or until 0.5 s after it
// exited (a process it left in another session may hold them open).
// One run at a time; destroying the runner kills a running script.
#pragma once

#include <boost/asio.hpp>
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
};

class DiscoveryScript {
 public:
  DiscoveryScript(boost::asio::io_context& io, Watchdog& watchdog, const ElasticSpec& spec,
                  const std::map<std::string, std::string>& environment);
  ~DiscoveryScript();
  DiscoveryScript(const DiscoveryScript&) = delete;
  DiscoveryScript& operator=(const DiscoveryScript&) = delete;

  // Starts a run; `done` is called on the io thread once it ended (never from inside run()).
  // Ignored while a run is under way.
  void run(std::function<void(DiscoveryResult)> done);
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
};

}  // namespace hvdrun::launcher
