// JobEvents: what happens to a job, as the components built around its core see it (the
// timeline, and each capability that watches a job rather than runs it). The job calls every
// component's handler, in the order the components were given (run/job_components.h), on the
// io thread, after its own state took the event in. Each event has an empty default: a
// component overrides those it uses. A component never keeps a reference into the event past
// its handler.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "launcher/job/collective_groups.h"
#include "launcher/job/generation_log.h"
#include "launcher/job/job_control.h"
#include "launcher/job/worker_table.h"

namespace hvdrun::launcher {

// A worker (or a warm spare: rank -1) of the job, with the name of its host.
struct WorkerEvent {
  const WorkerRecord& record;
  const std::string& host;
  std::size_t generation;  // the current generation's number
};

class JobEvents {
 public:
  using Clock = std::chrono::steady_clock;
  using Args = JobControl::Args;

  virtual ~JobEvents() = default;

  // The job is built: what the component may ask of it, for the job's life.
  virtual void attached(JobControl& /*job*/) {}
  // Every second while the job runs, after the second's collectives (collectives_timed).
  virtual void tick() {}
  // The job's summary is being printed: the component's lines, if any (after the outcome's,
  // before the generations').
  virtual void summarize() const {}

  // Workers of the current generation whose processes are being started now.
  virtual void workers_started(const std::vector<WorkerEvent>& /*started*/) {}
  // Warm spares whose processes are being started now.
  virtual void spares_started(const std::vector<WorkerEvent>& /*started*/) {}
  // A worker's or a spare's process ended (record.end()), or the launcher gave it up.
  virtual void worker_ended(const WorkerEvent& /*ended*/) {}
  // A warm spare became a worker of the next generation (its record is the spare's).
  virtual void spare_promoted(const WorkerEvent& /*spare*/) {}
  // The current generation ended (or the job did: the last one ends with it).
  virtual void generation_ended(std::size_t /*number*/,
                                const GenerationLog::Generation& /*generation*/) {}
  // A remote host's agent is ready, `since` the job's launch.
  virtual void host_connected(std::size_t /*host*/, const std::string& /*name*/,
                              Clock::time_point /*since*/, const std::string& /*route_from*/) {}
  // Collectives timed by every member (or given up waiting for one).
  virtual void collectives_timed(const std::vector<CollectiveGroup>& /*groups*/) {}
  // The ranks' stacks were collected, from `start`, for `why` ("SIGQUIT from pid 12", ...).
  virtual void stacks_collected(const std::string& /*why*/, Clock::time_point /*start*/,
                                std::size_t /*ranks*/) {}
  // Something the launcher did or saw, by name: a signal, a restart, a stall, a straggler.
  virtual void happened(const std::string& /*what*/, const Args& /*args*/) {}
  // The job is over: nothing follows.
  virtual void job_ended() {}
};

using JobComponents = std::vector<std::unique_ptr<JobEvents>>;

}  // namespace hvdrun::launcher
