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
    // A name's lookup (maybe DNS) is made once for the job (LocalHosts), not at every run;
    // the merge runs with the parse, off the io thread.
    script_.run(
        [this](DiscoveryResult result) {
          if (!wanted_()) return;
          on_result(std::move(result));
          poll();
        },
        [&local = local_hosts_](DiscoveryResult& result) {
          result.note = merge_local_aliases(
              result.hosts, result.hosts.size(),
              [&local](const std::string& name) { return local.contains(name); });
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
  if (result.note != alias_note_ && !result.note.empty()) note(result.note);
  alias_note_ = std::move(result.note);
  on_hosts_(std::move(result.hosts));
}

}  // namespace hvdrun::launcher
