// DiscoveryPoller: the --host-discovery-script every --discovery-interval while the job wants
// it. A run that fails is warned about once (the job keeps the hosts it has) until one works
// again; the host list of one that works goes to `on_hosts`, the aliases of this machine in it
// merged into one host (local_aliases.h; said once per change). io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "launcher/discovery/discovery_script.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

class DiscoveryPoller {
 public:
  // `wanted`: whether the job still takes host lists (asked before each run and after it);
  // `local_hosts`: which names are this machine (outlives this); `alias_note`: the merge of
  // this machine's aliases already said at the start.
  DiscoveryPoller(boost::asio::io_context& io, Watchdog& watchdog, const ElasticSpec& spec,
                  const std::map<std::string, std::string>& environment, LocalHosts& local_hosts,
                  std::string alias_note, std::function<bool()> wanted,
                  std::function<void(std::vector<HostSpec>)> on_hosts);
  // The next run after one interval.
  void poll();
  // Stops the timer and kills a running script.
  void cancel();

 private:
  void on_result(DiscoveryResult result);

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  DiscoveryScript script_;
  std::function<bool()> wanted_;
  std::function<void(std::vector<HostSpec>)> on_hosts_;
  std::string failure_;      // the last run's failure; empty: it worked
  std::string alias_note_;   // the last merge of this machine's aliases said
  LocalHosts& local_hosts_;  // whether a name is this machine, looked up once
};

}  // namespace hvdrun::launcher
