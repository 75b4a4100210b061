// initial_hosts (initial_hosts.h): the discovery script on a short-lived io_context.
#include "launcher/discovery/initial_hosts.h"

#include <signal.h>

#include <boost/asio.hpp>
#include <optional>

#include "hvdrun/error.h"
#include "launcher/discovery/discovery_script.h"
#include "launcher/output/logging.h"
#include "launcher/process/interrupted.h"
#include "launcher/process/signal_watch.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {

namespace asio = boost::asio;

std::vector<HostSpec> initial_hosts(const JobSpec& spec, Watchdog& watchdog,
                                    const std::map<std::string, std::string>& environment) {
  asio::io_context io(1);
  DiscoveryScript script(io, watchdog, spec.elastic, environment);
  asio::steady_timer deadline(io), next_run(io);
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);  // as the job's (job/job_teardown.cpp)
  signals.add(SIGQUIT);
  const JobSignalsUnblocked unblocked;  // its handlers are in: a Ctrl-C ends the wait
  int interrupted_by = 0;
  std::optional<std::vector<HostSpec>> hosts;
  std::string failure;
  int last_slots = -1;
  std::function<void()> run_once = [&] {
    script.run([&](DiscoveryResult result) {
      if (!result.error.empty()) {
        failure = result.error;
        io.stop();
        return;
      }
      const int slots = total_slots(result.hosts);
      if (slots >= spec.num_proc) {
        hosts = std::move(result.hosts);
        io.stop();
        return;
      }
      if (slots != last_slots) {
        note("the discovery script gives " + std::to_string(slots) + " of the " +
             std::to_string(spec.num_proc) + " slots -np needs; waiting up to " +
             std::to_string(spec.elastic.timeout.count()) + " s (--elastic-timeout)");
        last_slots = slots;
      }
      next_run.expires_after(spec.elastic.discovery_interval);
      next_run.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) run_once();
      });
    });
  };
  deadline.expires_after(spec.elastic.timeout);
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    const std::string waited =
        std::to_string(spec.elastic.timeout.count()) + " s (--elastic-timeout)";
    failure = last_slots < 0
                  ? "the discovery script did not finish a run in " + waited
                  : "the discovery script gave only " + std::to_string(last_slots) + " of the " +
                        std::to_string(spec.num_proc) + " slots -np needs for " + waited;
    io.stop();
  });
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    failure = "interrupted (" + signal_name(signo) + ") while waiting for the discovery script's " +
              std::to_string(spec.num_proc) + " slots";
    interrupted_by = signo;
    io.stop();
  });
  run_once();
  io.run();
  script.cancel();
  if (interrupted_by != 0) throw Interrupted(interrupted_by, failure);
  if (!hosts) throw Error(failure);
  return std::move(*hosts);
}

}  // namespace hvdrun::launcher
