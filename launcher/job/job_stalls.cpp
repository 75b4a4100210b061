// The job's stall watch (job.h): every second, what the members of the running generation
// last said of their collectives (stall_check.h); a stall is said once, and ends the job
// after --stall-shutdown.
#include "common/duration_text.h"
#include "launcher/job/job.h"
#include "launcher/job/stall_check.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {
namespace {

constexpr auto kStallCheckInterval = std::chrono::seconds(1);

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
  if (!state_.is(JobState::kRunning)) return;
  auto timeout = spec_.stall_timeout;
  if (spec_.stall_shutdown && (timeout.count() == 0 || *spec_.stall_shutdown < timeout)) {
    timeout = *spec_.stall_shutdown;
  }
  const auto stall = find_stall(faces_.progress(), timeout);
  if (!stall) return;
  const std::pair key{faces_.generation(), stall->sequence};
  if (spec_.stall_shutdown && stall->waited >= *spec_.stall_shutdown) {
    fail_for("stalled: " + stall->describe() + " (--stall-shutdown " +
             describe_duration(*spec_.stall_shutdown) + ")");
    return;
  }
  if (stall_reported_ == key || spec_.stall_timeout.count() == 0) return;
  stall_reported_ = key;
  note("warning: stall: " + stall->describe());
}

}  // namespace hvdrun::launcher
