// RankQueries: the answers to elastic Horovod's GET /rank_and_size/<host>:<local_rank>, without
// sockets. A Horovod worker asks it in hvd.init() after hvd.shutdown() (after a collective
// failed, or at a commit after hosts changed), naming itself by its HOROVOD_HOSTNAME and its
// HOROVOD_LOCAL_RANK of the generation it was in; the answer,
// "rank,size,local_rank,local_size,cross_rank,cross_size", is its place in the next one.
// As horovodrun's registry barrier does, a generation's answers go out together, once every
// survivor that will ask has asked: a worker registered (hvd.elastic.run's
// PUT /worker_addresses/<name>) or answered before. A survivor that dies before it asks makes
// the launcher form another generation, whose answers replace these; answering early would
// leave the others stuck in a Gloo setup with a dead member. Each answer is given once. A
// survivor that did not ask before the next generation came (it was slow) still goes by its
// older name: the next generation's answer for it is filed under that name.
// Thread: one owner thread, no locks.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/slot.h"

namespace hvdrun::launcher::horovod {

class RankQueries {
 public:
  // The worker called `name` in the current generation will ask at the next re-formation; a
  // survivor of a generation already formed that registers now (late into hvd.elastic.run) is
  // awaited by that generation's answers too, unless it asked.
  void registered(const std::string& name);
  // The next generation, of `size` workers: `survivors` maps each survivor's name in the
  // generation that ended to its slot in this one. Unasked answers of the previous one are
  // dropped.
  void next_generation(const std::map<std::string, Slot>& survivors, int size);
  // Whether this generation has an answer for `name` not given yet.
  bool answers(const std::string& name) const { return pending_.contains(name); }
  // `names` ask (answers() holds for each): the answers due now, as (name, answer): every
  // asker's once the last awaited survivor asked (or at once after that); none while some
  // awaited survivor has not asked.
  std::vector<std::pair<std::string, std::string>> ask(const std::vector<std::string>& names);
  // Answers not given yet.
  std::size_t pending() const noexcept { return pending_.size(); }
  // Survivors this generation's answers wait for, not asked yet.
  std::size_t awaited() const noexcept { return awaited_.size(); }
  // Whether `waiting` (names asking for a generation that has no answer for them) holds every
  // worker that will ask, and there is one: all of them want a re-formation though the
  // launcher saw no failure (a collective failed without any worker exiting).
  bool all_registered_among(const std::set<std::string>& waiting) const;

 private:
  struct Answer {
    std::string text;
    int local_rank = 0;  // the survivor's name in this generation is "<host>:<local_rank>"
    bool asked = false;
  };
  // Gives every asked answer: the survivors' names in this generation become registered.
  std::vector<std::pair<std::string, std::string>> release();

  std::map<std::string, Answer> pending_;
  std::set<std::string> awaited_;     // names of pending_ that will ask and have not
  std::set<std::string> registered_;  // names workers will ask with at the next re-formation
  std::set<std::string> given_;       // names this generation's answers gave (registered_ has them)
};

// "-1,-1,-1,-1,-1,-1": Horovod's answer for a worker that is not in the job (it then fails
// with "<host>[<local_rank>] has been removed from elastic job").
inline constexpr const char* kNotInJob = "-1,-1,-1,-1,-1,-1";

}  // namespace hvdrun::launcher::horovod
