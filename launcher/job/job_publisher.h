// JobPublisher: the job's components (job_events.h) and what tells them of the job's events,
// in the order they were given, each event with what a component needs of it (the worker's
// host name, the generation's number). Owned by the job, used by its parts. io thread only.
#pragma once

#include <vector>

#include "launcher/job/generation_log.h"
#include "launcher/job/job_events.h"
#include "launcher/job/worker_table.h"
#include "launcher/workers/pools.h"

namespace hvdrun::launcher {

class JobPublisher {
 public:
  // `pools` and `generations` outlive this.
  JobPublisher(JobComponents components, const Pools& pools, const GenerationLog& generations)
      : components_(std::move(components)), pools_(pools), generations_(generations) {}

  // What each component may ask of the job, for the job's life.
  void attach(JobControl& job);
  // The components' lines of the summary.
  void summarize() const;

  template <typename... Params, typename... Args>
  void publish(void (JobEvents::*event)(Params...), Args&&... args) {
    for (const auto& component : components_) (component.get()->*event)(args...);
  }
  // An event about one worker (or spare).
  void worker(void (JobEvents::*event)(const WorkerEvent&), const WorkerRecord& record);
  // Workers (or spares) of `table` whose processes are being started now.
  void started(void (JobEvents::*event)(const std::vector<WorkerEvent>&), const WorkerTable& table,
               const std::vector<WorkerId>& ids);
  // The current generation ended (or the job did).
  void generation_ended();

 private:
  WorkerEvent worker_event(const WorkerRecord& record) const;

  JobComponents components_;
  const Pools& pools_;
  const GenerationLog& generations_;
};

}  // namespace hvdrun::launcher
