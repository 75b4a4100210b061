// JobTimeline (job_timeline.h): the job's events drawn on the --timeline's tracks.
#include "launcher/timeline/job_timeline.h"

namespace hvdrun::launcher {

JobTimeline::JobTimeline(const JobSpec& spec, const RunPlan& plan, Clock::time_point origin)
    : timeline_(*spec.timeline, spec.timeline_max_events, origin) {
  if (spec.timeline_collectives) collectives_.emplace(timeline_, spec.timeline_rank_events);
  if (!plan.preflight_results.empty()) {
    Args args{{"took_ms", std::to_string(plan.preflight_took.count())}};
    for (const auto& [host, verdict] : plan.preflight_results) args.emplace_back(host, verdict);
    happened("preflight", args);
  }
}

int JobTimeline::host_track(std::size_t host, const std::string& name) {
  const int pid = 1 + static_cast<int>(host);
  if (named_hosts_.insert(pid).second) timeline_.name_process(pid, "host " + name);
  return pid;
}

void JobTimeline::workers_started(const std::vector<WorkerEvent>& started) {
  const auto now = Clock::now();
  for (const auto& w : started) {
    started_[w.record.id] = now;
    if (collectives_) {
      collectives_->track(w.record.key.value, 1 + static_cast<int>(w.record.id.host),
                          1 + static_cast<int>(w.record.key.value));
    }
  }
}

void JobTimeline::spares_started(const std::vector<WorkerEvent>& started) {
  const auto now = Clock::now();
  for (const auto& w : started) started_[w.record.id] = now;
}

void JobTimeline::worker_ended(const WorkerEvent& ended) {
  const WorkerRecord& record = ended.record;
  const auto started = started_.find(record.id);
  if (started == started_.end()) return;
  const int pid = host_track(record.id.host, ended.host);
  const int tid = 1 + static_cast<int>(record.key.value);  // 0: the host's connection
  timeline_.name_thread(pid, tid, "worker " + std::to_string(record.key.value));
  Args args{{"rank", std::to_string(record.slot().rank)},
            {"generation", std::to_string(ended.generation)}};
  if (record.end()) args.emplace_back("end", record.end()->what_happened());
  if (!record.lost.empty()) args.emplace_back("lost", record.lost);
  const std::string name = record.slot().rank < 0 ? "spare " + std::to_string(record.key.value)
                                                  : "rank " + std::to_string(record.slot().rank);
  timeline_.span(pid, tid, name, "worker", started->second, Clock::now(), args);
  started_.erase(started);
}

// Its span as a spare ends; its span as a worker begins.
void JobTimeline::spare_promoted(const WorkerEvent& spare) {
  worker_ended(spare);
  started_[spare.record.id] = Clock::now();
}

void JobTimeline::generation_ended(std::size_t number, const GenerationLog::Generation& g) {
  Args args{{"size", std::to_string(g.size)},
            {"ended", g.end_reason.empty() ? "the job ended" : g.end_reason}};
  if (g.formed) {
    args.emplace_back(
        "formed_after_ms",
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(*g.formed - g.started).count()));
  }
  timeline_.span(Timeline::kLauncher, 0,
                 "generation " + std::to_string(number) + " (" + std::to_string(g.size) + " ranks)",
                 "generation", g.started, g.ended.value_or(Clock::now()), args);
}

void JobTimeline::host_connected(std::size_t host, const std::string& name, Clock::time_point since,
                                 const std::string& route_from) {
  timeline_.span(host_track(host, name), 0, "connected", "host", since, Clock::now(),
                 {{"route_from", route_from}});
}

void JobTimeline::collectives_timed(const std::vector<CollectiveGroup>& groups) {
  if (!collectives_) return;
  for (const auto& group : groups) collectives_->add(group);
}

void JobTimeline::stacks_collected(const std::string& why, Clock::time_point start,
                                   std::size_t ranks) {
  timeline_.span(Timeline::kLauncher, 0, "stacks (" + why + ")", "stacks", start, Clock::now(),
                 {{"ranks", std::to_string(ranks)}});
}

void JobTimeline::happened(const std::string& what, const Args& args) {
  timeline_.instant(Timeline::kLauncher, 0, what, "event", Clock::now(), args);
}

void JobTimeline::job_ended() {
  if (collectives_) collectives_->close();
  timeline_.close();
}

}  // namespace hvdrun::launcher
