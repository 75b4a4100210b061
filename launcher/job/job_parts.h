// JobParts: what the job's membership (and that one's spares) works with: the job's own
// tables, faces, pools and policy, and JobCore, its lifecycle. All of them are the job's and
// outlive its parts. io thread only.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "launcher/job/generation_log.h"
#include "launcher/job/job_control.h"
#include "launcher/job/job_core.h"
#include "launcher/job/job_publisher.h"
#include "launcher/job/worker_table.h"
#include "launcher/plan/run_plan.h"
#include "launcher/policy/policy.h"
#include "launcher/servers/rendezvous_faces.h"
#include "launcher/spec/job_spec.h"
#include "launcher/workers/pools.h"

namespace hvdrun::launcher {

struct JobParts {
  const JobSpec& spec;
  const RunPlan& run;  // its hosts at the start, the preflight's findings
  OutputSink& sink;
  const std::map<std::string, std::string>& environment;
  RendezvousFaces& faces;
  Pools& pools;
  WorkerTable& workers;  // the current generation's
  GenerationLog& generations;
  JobPublisher& publisher;
  Policy& policy;
  JobCore& core;
  JobControl& control;

  // The rendezvous' next generation, and the MASTER_PORT its workers are given; returns it.
  std::uint16_t start_generation(GenerationStart start) const {
    const std::uint16_t port = faces.start_generation(std::move(start));
    pools.rendezvous().master_port = port;
    return port;
  }
};

}  // namespace hvdrun::launcher
