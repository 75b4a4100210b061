// The job's events, told to its components (job.h, job_events.h).
#include "launcher/job/job.h"

namespace hvdrun::launcher {

WorkerEvent Job::worker_event(const WorkerRecord& record) const {
  return WorkerEvent{record, pools_.host_name(record.id.host), generations_.number()};
}

void Job::publish_started(void (JobEvents::*event)(const std::vector<WorkerEvent>&),
                          const WorkerTable& table, const std::vector<WorkerId>& ids) {
  if (components_.empty()) return;
  std::vector<WorkerEvent> started;
  for (const auto& id : ids) {
    if (const WorkerRecord* record = table.find(id)) started.push_back(worker_event(*record));
  }
  publish(event, started);
}

void Job::publish_generation_end() {
  publish(&JobEvents::generation_ended, generations_.number(), generations_.current());
}

void Job::happened(const std::string& what, const Args& args) {
  publish(&JobEvents::happened, what, args);
}

}  // namespace hvdrun::launcher
