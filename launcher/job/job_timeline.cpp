// What the job records in --timeline (job.h, timeline.h): every worker's life on its host's
// track, each host's connection, each generation with why it ended, and the launcher's events.
#include "launcher/job/job.h"

namespace hvdrun::launcher {

void Job::trace_event(const std::string& name, const Timeline::Args& args) {
  if (timeline_) timeline_->instant(Timeline::kLauncher, 0, name, "event", Clock::now(), args);
}

void Job::trace_workers_started(const std::vector<WorkerId>& ids) {
  if (!timeline_) return;
  const auto now = Clock::now();
  for (const auto& id : ids) {
    trace_started_[id] = now;
    const WorkerRecord* record = workers_.find(id);
    if (collective_trace_ && record != nullptr) {
      collective_trace_->track(record->key.value, 1 + static_cast<int>(id.host),
                               1 + static_cast<int>(record->key.value));
    }
  }
}

void Job::trace_collectives(const std::vector<CollectiveGroup>& groups) {
  if (!collective_trace_) return;
  for (const auto& group : groups) collective_trace_->add(group);
}

void Job::trace_worker_ended(const WorkerRecord& record) {
  if (!timeline_) return;
  const auto started = trace_started_.find(record.id);
  if (started == trace_started_.end()) return;
  const int pid = 1 + static_cast<int>(record.id.host);
  const int tid = 1 + static_cast<int>(record.key.value);  // 0: the host's connection
  if (traced_hosts_.insert(pid).second) {
    timeline_->name_process(pid, "host " + pools_.host_name(record.id.host));
  }
  timeline_->name_thread(pid, tid, "worker " + std::to_string(record.key.value));
  Timeline::Args args{{"rank", std::to_string(record.slot().rank)},
                      {"generation", std::to_string(generations_.number())}};
  if (record.end()) args.emplace_back("end", record.end()->what_happened());
  if (!record.lost.empty()) args.emplace_back("lost", record.lost);
  const std::string name = record.slot().rank < 0 ? "spare " + std::to_string(record.key.value)
                                                  : "rank " + std::to_string(record.slot().rank);
  timeline_->span(pid, tid, name, "worker", started->second, Clock::now(), args);
  trace_started_.erase(started);
}

void Job::trace_host(std::size_t host, const std::string& name, Clock::time_point start,
                     const Timeline::Args& args) {
  if (!timeline_) return;
  const int pid = 1 + static_cast<int>(host);
  if (traced_hosts_.insert(pid).second) {
    timeline_->name_process(pid, "host " + pools_.host_name(host));
  }
  timeline_->span(pid, 0, name, "host", start, Clock::now(), args);
}

void Job::trace_generation_end() {
  if (!timeline_) return;
  const auto& g = generations_.current();
  Timeline::Args args{{"size", std::to_string(g.size)},
                      {"ended", g.end_reason.empty() ? "the job ended" : g.end_reason}};
  if (g.formed) {
    args.emplace_back(
        "formed_after_ms",
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(*g.formed - g.started).count()));
  }
  timeline_->span(Timeline::kLauncher, 0,
                  "generation " + std::to_string(generations_.number()) + " (" +
                      std::to_string(g.size) + " ranks)",
                  "generation", g.started, g.ended.value_or(Clock::now()), args);
}

}  // namespace hvdrun::launcher
