// The worker table (worker_table.h).
#include "launcher/job/worker_table.h"

#include "hvdrun/error.h"

namespace hvdrun::launcher {

std::string WorkerRecord::who() const {
  const ProcessEnd* end = end_ ? &*end_ : nullptr;
  return "rank " + std::to_string(slot_.rank) + " (host " + slot_.host +
         (end && end->pid ? ", pid " + std::to_string(end->pid) : "") + ")";
}

WorkerRecord& WorkerTable::add(const WorkerId& id, WorkerKey key, const Slot& slot) {
  if (by_id_.contains(id) || by_key_.contains(key)) {
    throw Error("internal: worker " + to_string(id) + " (key " + std::to_string(key.value) +
                ") is already in the job");
  }
  auto record = std::make_unique<WorkerRecord>(id, key, slot);
  WorkerRecord* raw = record.get();
  by_id_.emplace(id, std::move(record));
  by_key_.emplace(key, raw);
  by_rank_.emplace(slot.rank, raw);
  return *raw;
}

template <typename Map>
static void erase_entry(Map& map, const typename Map::key_type& key, const WorkerRecord* record) {
  auto [first, last] = map.equal_range(key);
  for (auto it = first; it != last; ++it) {
    if (it->second == record) {
      map.erase(it);
      return;
    }
  }
}

void WorkerTable::unindex(const WorkerRecord& record) {
  by_key_.erase(record.key);
  erase_entry(by_rank_, record.slot_.rank, &record);
  if (!record.horovod_name_.empty()) erase_entry(by_horovod_name_, record.horovod_name_, &record);
  if (record.end_) {
    --ended_;
    if (record.end_->success()) --finished_;
  } else if (record.newcomer_) {
    --running_newcomers_;
  }
}

void WorkerTable::erase(const WorkerId& id) {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  unindex(*it->second);
  by_id_.erase(it);
}

void WorkerTable::clear() {
  by_id_.clear();
  by_key_.clear();
  by_horovod_name_.clear();
  by_rank_.clear();
  ended_ = 0;
  finished_ = 0;
  running_newcomers_ = 0;
}

WorkerRecord* WorkerTable::find(const WorkerId& id) {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.get();
}

const WorkerRecord* WorkerTable::find(const WorkerId& id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.get();
}

WorkerRecord* WorkerTable::find(WorkerKey key) {
  const auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second;
}

WorkerRecord* WorkerTable::unregistered(const std::string& horovod_name) {
  WorkerRecord* first = nullptr;
  auto [begin, end] = by_horovod_name_.equal_range(horovod_name);
  for (auto it = begin; it != end; ++it) {
    WorkerRecord* record = it->second;
    if (record->end_ || record->horovod_registered) continue;
    if (!first || record->id < first->id) first = record;
  }
  return first;
}

const WorkerRecord* WorkerTable::rank_zero(bool running_only) const {
  const WorkerRecord* found = nullptr;
  auto [begin, end] = by_rank_.equal_range(0);
  for (auto it = begin; it != end; ++it) {
    const WorkerRecord* record = it->second;
    if (running_only && (record->end_ || record->removed)) continue;
    if (!found || found->id < record->id) found = record;  // the last in WorkerId order
  }
  return found;
}

void WorkerTable::set_slot(WorkerRecord& record, const Slot& slot) {
  erase_entry(by_rank_, record.slot_.rank, &record);
  record.slot_ = slot;
  by_rank_.emplace(slot.rank, &record);
}

void WorkerTable::set_end(WorkerRecord& record, ProcessEnd end) {
  if (record.end_) return;
  record.end_ = std::move(end);
  ++ended_;
  if (record.end_->success()) ++finished_;
  if (record.newcomer_) --running_newcomers_;
}

void WorkerTable::set_newcomer(WorkerRecord& record) {
  if (record.newcomer_) return;
  record.newcomer_ = true;
  if (!record.end_) ++running_newcomers_;
}

void WorkerTable::clear_newcomers() {
  if (running_newcomers_ == 0 && by_id_.empty()) return;
  for (auto& [id, record] : by_id_) record->newcomer_ = false;
  running_newcomers_ = 0;
}

void WorkerTable::name_for_horovod(WorkerRecord& record) {
  if (!record.horovod_name_.empty()) {
    erase_entry(by_horovod_name_, record.horovod_name_, &record);
  }
  record.horovod_name_ = record.slot_.host + ":" + std::to_string(record.slot_.local_rank);
  by_horovod_name_.emplace(record.horovod_name_, &record);
}

}  // namespace hvdrun::launcher
