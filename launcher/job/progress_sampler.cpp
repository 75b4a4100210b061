// The job's progress, sampled every second (progress_sampler.h).
#include "launcher/job/progress_sampler.h"

#include <chrono>

namespace hvdrun::launcher {
namespace {

constexpr auto kTickInterval = std::chrono::seconds(1);

}  // namespace

void ProgressSampler::watch() {
  timer_.expires_after(kTickInterval);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    take_samples();
    spares_.check_horovod();
    publisher_.publish(&JobEvents::tick);
    watch();
  });
}

void ProgressSampler::stop() {
  stopped_ = true;
  timer_.cancel();
  take_samples();
}

void ProgressSampler::take_samples() {
  auto samples = faces_.take_samples();
  if (samples.empty()) return;
  const auto groups =
      groups_.add(std::move(samples), faces_.generation(), faces_.progress().size());
  publisher_.publish(&JobEvents::collectives_timed, groups);
}

}  // namespace hvdrun::launcher
