// What the job does on each event, for each kind of job: the one interface through which every
// decision that differs between job kinds goes. The job core (job/job.h) reports events with
// the facts a decision needs (JobFacts) and carries out the Action it gets back; a policy does
// no I/O and keeps only its own counts (restarts, re-formations) and state.
// Four kinds, one chosen when the job starts (make_policy()): fail-fast (static jobs),
// restart-all (--max-restarts), elastic (survivors re-form) and Horovod-elastic (elastic, with
// host changes delivered to the Horovod workers' rank 0 once a worker uses Horovod's
// rendezvous). io thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/process_end.h"
#include "launcher/plan/worker_id.h"
#include "launcher/spec/job_spec.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {

// What the job's state is when an event comes.
struct JobFacts {
  std::size_t live = 0;  // members of an elastic job (running or not yet reaped)
  // Running workers that took part in the training (not newcomers still waiting for their
  // first generation to form), and the newcomers.
  std::size_t members_running = 0;
  std::size_t newcomers_running = 0;
  bool waiting_for_slots = false;  // below --min-np, waiting for slots
  bool winding_down = false;       // a worker of the generation finished (exit 0)
  // Elastic Horovod: a host change sent to rank 0 that the workers have not taken in yet.
  bool host_update_pending = false;
  std::string host_update_reason;
};

// A worker of the running generation ended (not one the job had told to stop).
struct WorkerEnded {
  WorkerId id;
  ProcessEnd end;
  bool slot_removed = false;  // its slot left the job (the discovery script) before it ended
};

// --exclude-stragglers found a persistent straggler.
struct StragglerFound {
  std::string verdict;   // "rank 2 (host h2) arrived last in 40 of 45 (89 %), late by ..."
  std::string reason;    // "straggler: <verdict> (--exclude-stragglers, margin 20 ms)"
  std::string host;      // its host's name
  std::size_t left = 0;  // members that would remain without that host, free slots counted
};

// A limit of the job's own ran out.
enum class Limit {
  kStallShutdown,   // a collective stalled past --stall-shutdown (its stacks were collected)
  kElasticTimeout,  // below --min-np past --elastic-timeout
};

// The job's slots changed: some were added (or are free again: a cooldown ended, a host
// joined) or the discovery script removed some.
enum class SlotsChange { kAdded, kRemoved };

struct Action {
  enum class Kind {
    kContinue,        // nothing to do
    kFailJob,         // the job fails (this worker's end, or `reason`): take every worker down
    kRestartAll,      // stop every worker, then start them all again as a new generation
    kReform,          // a new generation: without the worker that ended (if any)
    kNotifyRankZero,  // send the change to the Horovod workers' rank 0 (they then ask to re-form)
    kFinishJob,       // the job succeeded: stop what still runs (newcomers, not needed) and end
  };
  Kind kind = Kind::kContinue;
  rdzv::Handover how = rdzv::Handover::kBroken;  // kReform: how the survivors take over
  std::string reason;                            // kRestartAll, kReform, kNotifyRankZero
  SlotsChange change = SlotsChange::kAdded;      // kNotifyRankZero
  bool counted = false;  // kRestartAll: counted against --max-restarts (a failure's)
  std::string note;      // a line for the user, if any
  bool operator==(const Action&) const = default;
};

class Policy {
 public:
  virtual ~Policy() = default;
  // A worker of the running generation ended.
  virtual Action worker_ended(const WorkerEnded& ended, const JobFacts& facts) = 0;
  // A host cannot be used at the job's start; without its workers, `remaining` are left:
  // kContinue (the job starts without them) or kFailJob.
  virtual Action host_unusable_at_start(std::size_t remaining) const;
  // The job's slots changed (elastic jobs).
  virtual Action slots_changed(SlotsChange change, const std::string& reason,
                               const JobFacts& facts);
  // A persistent straggler was found: kReform (its host leaves, the others re-form without it;
  // a re-formation like any other, counted against --reset-limit) or kContinue (it stays).
  virtual Action straggler_found(const StragglerFound& found, const JobFacts& facts);
  // `limit` ran out, for `reason`: kFailJob with that reason.
  virtual Action limit_reached(Limit limit, const std::string& reason, const JobFacts& facts);
  // Horovod workers (`waiting` of them) asked for their places in a next generation, though
  // none of them exited.
  virtual Action reform_asked(std::size_t waiting, const JobFacts& facts);
  // A worker stored a key in Horovod's rendezvous (from `peer`): a note when this changes
  // what the job does.
  virtual std::string horovod_in_use(const std::string& peer);

  // After kFailJob: the limit that made this failure the job's ("no restart left:
  // --max-restarts 2 used"); empty without one.
  virtual std::string exhausted() const { return {}; }
  // Failures the job went on after (restarts, re-formations).
  virtual int survived() const { return 0; }
  // TORCHELASTIC_RESTART_COUNT of the next generation, the job having had `generations`.
  virtual int restart_count(std::size_t generations) const { return static_cast<int>(generations); }
};

// The policy for `spec`: restart-all with --max-restarts, Horovod-elastic for an elastic job
// whose survivors re-form, else fail-fast.
std::unique_ptr<Policy> make_policy(const JobSpec& spec);

}  // namespace hvdrun::launcher
