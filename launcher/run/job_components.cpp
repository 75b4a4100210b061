// job_components (job_components.h).
#include "launcher/run/job_components.h"

#include "launcher/timeline/job_timeline.h"

namespace hvdrun::launcher {

JobComponents job_components(const JobSpec& spec, std::chrono::steady_clock::time_point origin) {
  JobComponents components;
  if (spec.timeline) components.push_back(std::make_unique<JobTimeline>(spec, origin));
  return components;
}

}  // namespace hvdrun::launcher
