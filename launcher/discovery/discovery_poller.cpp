// The discovery script run periodically (discovery_poller.h).
#include "launcher/discovery/discovery_poller.h"

#include "launcher/output/logging.h"
#include "launcher/spec/local_aliases.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

DiscoveryPoller::DiscoveryPoller(boost::asio::io_context& io, Watchdog& watchdog,
                                 const ElasticSpec& spec,
                                 const std::map<std::string, std::string>& environment,
                                 LocalHosts& local_hosts, std::string alias_note,
                                 std::function<bool()> wanted,
                                 std::function<void(std::vector<HostSpec>)> on_hosts)
    : timer_(io),
      interval_(spec.discovery_interval),
      script_(io, watchdog, spec, environment),
      wanted_(std::move(wanted)),
      on_hosts_(std::move(on_hosts)),
      alias_note_(std::move(alias_note)),
      local_hosts_(local_hosts) {}

void DiscoveryPoller::poll() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !wanted_()) return;
    script_.run([this](DiscoveryResult result) {
      if (!wanted_()) return;
      on_result(std::move(result));
      poll();
    });
  });
}

void DiscoveryPoller::cancel() {
  timer_.cancel();
  script_.cancel();
}

void DiscoveryPoller::on_result(DiscoveryResult result) {
  if (!result.error.empty()) {
    if (result.error != failure_) {
      note("warning: " + result.error + "; the job keeps the hosts it has");
    }
    failure_ = std::move(result.error);
    return;
  }
  if (!failure_.empty()) note("the discovery script works again");
  failure_.clear();
  // A name's lookup (maybe DNS) is made once for the job (LocalHosts), not at every run.
  std::string merged =
      merge_local_aliases(result.hosts, result.hosts.size(),
                          [this](const std::string& name) { return local_hosts_.contains(name); });
  if (merged != alias_note_ && !merged.empty()) note(merged);
  alias_note_ = std::move(merged);
  on_hosts_(std::move(result.hosts));
}

}  // namespace hvdrun::launcher
