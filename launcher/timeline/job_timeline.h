// JobTimeline: --timeline as a component on the job's events (job/job_events.h): every
// worker's life on its host's track, each host's connection, each generation with why it
// ended, the launcher's events (signals, restarts, stalls, stacks, stragglers) and, with
// --timeline-collectives, libhvdrun's collectives on their workers' tracks. The file and its
// bounds are timeline.h's. io thread only.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/job/job_events.h"
#include "launcher/plan/run_plan.h"
#include "launcher/spec/job_spec.h"
#include "launcher/timeline/collective_trace.h"
#include "launcher/timeline/timeline.h"

namespace hvdrun::launcher {

class JobTimeline final : public JobEvents {
 public:
  // Creates spec.timeline (UsageError naming it when that fails); times from `origin`. The
  // preflight's verdicts, checked before the job's time begins, come first.
  JobTimeline(const JobSpec& spec, const RunPlan& plan, Clock::time_point origin);

  void workers_started(const std::vector<WorkerEvent>& started) override;
  void spares_started(const std::vector<WorkerEvent>& started) override;
  void worker_ended(const WorkerEvent& ended) override;
  void spare_promoted(const WorkerEvent& spare) override;
  void generation_ended(std::size_t number, const GenerationLog::Generation& generation) override;
  void host_connected(std::size_t host, const std::string& name, Clock::time_point since,
                      const std::string& route_from) override;
  void collectives_timed(const std::vector<CollectiveGroup>& groups) override;
  void stacks_collected(const std::string& why, Clock::time_point start,
                        std::size_t ranks) override;
  void happened(const std::string& what, const Args& args) override;
  void job_ended() override;

 private:
  // The track of `host` (1 + its index), named the first time.
  int host_track(std::size_t host, const std::string& name);

  Timeline timeline_;
  std::optional<CollectiveTrace> collectives_;     // --timeline-collectives
  std::map<WorkerId, Clock::time_point> started_;  // workers and spares running: their spans
  std::set<int> named_hosts_;                      // host tracks named so far
};

}  // namespace hvdrun::launcher
