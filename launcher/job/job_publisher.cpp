// The job's events, told to its components (job_publisher.h).
#include "launcher/job/job_publisher.h"

namespace hvdrun::launcher {

void JobPublisher::attach(JobControl& job) {
  for (const auto& component : components_) component->attached(job);
}

void JobPublisher::summarize() const {
  for (const auto& component : components_) component->summarize();
}

WorkerEvent JobPublisher::worker_event(const WorkerRecord& record) const {
  return WorkerEvent{record, pools_.host_name(record.id.host), generations_.number()};
}

void JobPublisher::worker(void (JobEvents::*event)(const WorkerEvent&),
                          const WorkerRecord& record) {
  publish(event, worker_event(record));
}

void JobPublisher::started(void (JobEvents::*event)(const std::vector<WorkerEvent>&),
                           const WorkerTable& table, const std::vector<WorkerId>& ids) {
  if (components_.empty()) return;
  std::vector<WorkerEvent> started;
  for (const auto& id : ids) {
    if (const WorkerRecord* record = table.find(id)) started.push_back(worker_event(*record));
  }
  publish(event, started);
}

void JobPublisher::generation_ended() {
  publish(&JobEvents::generation_ended, generations_.number(), generations_.current());
}

}  // namespace hvdrun::launcher
