// WorkerTable: one record per worker of the current generation (and the newcomers of the
// next), found by WorkerId, by key (HVDRUN_SLOT) and by Horovod name in O(log n); the running
// and ended counts and the rank-0 worker come from the table, never from counters kept by its
// users. A record's end, slot and Horovod name change only through the table, which keeps its
// indexes with them. Records have stable addresses until erased. io thread only.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/process_end.h"
#include "common/slot.h"
#include "launcher/plan/worker_id.h"

namespace hvdrun::launcher {

class WorkerTable;

// A worker of the job: its identity, its key, its slot (rank and topology in this
// generation; empty host for a newcomer not yet placed), how it ended.
class WorkerRecord {
 public:
  WorkerRecord(WorkerId worker, WorkerKey worker_key, Slot slot)
      : id(worker), key(worker_key), slot_(std::move(slot)) {}

  const WorkerId id;
  const WorkerKey key;
  std::string lost;      // when the launcher gave it up (missed heartbeats): why
  bool removed = false;  // its slot left the discovery output: not in the next generation
  bool horovod_registered = false;  // it registered its notification service
  bool from_spare = false;          // a warm spare, promoted

  const Slot& slot() const noexcept { return slot_; }
  // Started to join survivors in a generation that has not formed yet: it has taken no part
  // in the training so far.
  bool newcomer() const noexcept { return newcomer_; }
  const std::optional<ProcessEnd>& end() const noexcept { return end_; }
  // Horovod's name for it, "<host>:<local_rank>" of the slot it started in (what it registers
  // its notification service under); empty before it starts.
  const std::string& horovod_name() const noexcept { return horovod_name_; }
  // "rank 2 (host h1, pid 4242)" (no pid for a worker that never ran).
  std::string who() const;

 private:
  friend class WorkerTable;
  Slot slot_;
  std::optional<ProcessEnd> end_;
  std::string horovod_name_;
  bool newcomer_ = false;
};

class WorkerTable {
 public:
  // A new worker; its id and key must be new to the table.
  WorkerRecord& add(const WorkerId& id, WorkerKey key, const Slot& slot);
  void erase(const WorkerId& id);
  void clear();

  WorkerRecord* find(const WorkerId& id);
  const WorkerRecord* find(const WorkerId& id) const;
  WorkerRecord* find(WorkerKey key);
  // The running worker started under Horovod's name `name` that has not registered its
  // notification service yet (of two, the one started first).
  WorkerRecord* unregistered(const std::string& horovod_name);
  // The worker with rank 0 in the current generation (null if none); `running_only`: among
  // the workers that have not ended and whose slot is still the job's.
  const WorkerRecord* rank_zero(bool running_only = false) const;

  void set_slot(WorkerRecord& record, const Slot& slot);
  void set_end(WorkerRecord& record, ProcessEnd end);  // once; later ends are ignored
  // Called as the worker starts: it takes Horovod's name of its slot then.
  void name_for_horovod(WorkerRecord& record);
  // A worker started to join survivors (a newcomer), until its generation forms.
  void set_newcomer(WorkerRecord& record);
  // The generation formed: every worker has taken part.
  void clear_newcomers();

  std::size_t size() const noexcept { return by_id_.size(); }
  bool empty() const noexcept { return by_id_.empty(); }
  std::size_t ended() const noexcept { return ended_; }
  std::size_t running() const noexcept { return by_id_.size() - ended_; }
  // Of the running workers, the newcomers (WorkerRecord::newcomer()).
  std::size_t running_newcomers() const noexcept { return running_newcomers_; }
  // A worker of the generation finished (exit 0): the job is ending.
  bool any_finished() const noexcept { return finished_ > 0; }

  // Iteration in WorkerId order; the records may be changed through the table meanwhile, but
  // not added or erased.
  template <typename F>
  void for_each(F&& f) {
    for (auto& [id, record] : by_id_) f(*record);
  }
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [id, record] : by_id_) f(static_cast<const WorkerRecord&>(*record));
  }

 private:
  void unindex(const WorkerRecord& record);

  std::map<WorkerId, std::unique_ptr<WorkerRecord>> by_id_;
  std::map<WorkerKey, WorkerRecord*> by_key_;
  std::multimap<std::string, WorkerRecord*> by_horovod_name_;
  std::multimap<int, WorkerRecord*> by_rank_;
  std::size_t ended_ = 0;     // records with an end (kept by set_end and unindex only)
  std::size_t finished_ = 0;  // of them, those that succeeded
  std::size_t running_newcomers_ = 0;
};

}  // namespace hvdrun::launcher
