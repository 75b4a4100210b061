// The workers of an elastic job and the places they can run, without I/O: which workers live
// where, which hosts are cooling down after a failure, where replacements can start (up to
// --max-np), and the members of the next generation with their ranks.
// Rank order of a generation: the longest-lived survivor first (it holds the state to
// broadcast), then the other survivors in their previous rank order, then the newcomers in
// the order they were started; local and cross ranks by host, as placement does.
// Warm spares (--spares) take slots too, beyond --max-np: they are started on free slots and
// wait, in no generation; fill() promotes them (oldest first) before it starts new workers.
// Every operation is O(n log n) or better in hosts and workers. io thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "launcher/plan/worker_id.h"
#include "launcher/spec/job_spec.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {

class ElasticMembership {
 public:
  using Clock = std::chrono::steady_clock;

  struct Worker {
    WorkerId id;
    std::uint32_t key = 0;  // HVDRUN_SLOT: in start order
    int rank = -1;          // in the current generation; -1: a newcomer
    bool promoted = false;  // from fill(): a spare that runs already, now a member
  };

  // What a new host list changed (update_hosts).
  struct HostsChange {
    std::vector<std::size_t> added;       // hosts seen for the first time (their new indices)
    std::vector<std::size_t> added_from;  // for each, its place in the list given
    std::vector<Worker> removed;          // workers whose host or slot is gone: no longer members
    std::vector<Worker> removed_spares;   // spares whose host or slot is gone
  };

  ElasticMembership(const std::vector<HostSpec>& hosts, int max_np,
                    std::chrono::seconds cooldown_min, std::chrono::seconds cooldown_max);

  // A worker that runs (the first ones, placed by the launcher).
  void add(WorkerId id, std::uint32_t key, int rank);
  // The worker (or spare) is gone (failed, finished or killed); false if it was neither.
  bool remove(std::uint32_t key);
  // The host's slots are not used until its cooldown ends: MIN, doubling with each failure
  // there, up to MAX. Returns the cooldown.
  std::chrono::seconds cool_down(std::size_t host, Clock::time_point now);
  // Workers to start on the free slots of hosts not cooling down, so that live() reaches
  // `limit` (at most max_np) at most; they become members (newcomers) with fresh keys.
  std::vector<Worker> fill(Clock::time_point now,
                           std::size_t limit = std::numeric_limits<std::size_t>::max());
  // How many more fill() with no limit would add now (spares promoted included).
  std::size_t free_slots(Clock::time_point now) const;
  // Spares to start on free slots of usable hosts so that `want` spares exist, at most, leaving
  // the job room to grow to --max-np; they get fresh keys and are no members until fill()
  // promotes them.
  std::vector<Worker> add_spares(Clock::time_point now, std::size_t want);
  std::size_t spares() const noexcept { return spares_.size(); }
  bool is_spare(std::uint32_t key) const { return spares_.contains(key); }
  // The members of the next generation, in rank order, with their topology; the workers'
  // ranks become these.
  std::vector<rdzv::Member> next_generation();
  // The hosts the discovery script printed now, in its order. A host keeps its index (and its
  // failures and cooldown) for the life of the job: one missing from the list has no slots
  // until it is listed again; a host with fewer slots loses the workers on its highest slots.
  HostsChange update_hosts(const std::vector<HostSpec>& hosts);
  // A host whose workers cannot start yet (an SSH host still connecting) or any more (its
  // connection failed) has no free slots; hosts are reachable by default.
  void set_reachable(std::size_t host, bool reachable);
  const std::string& host_name(std::size_t host) const { return hosts_.at(host).name; }
  std::size_t host_count() const noexcept { return hosts_.size(); }
  // The earliest end of a cooldown not taken yet by end_cooldowns(): it may be past already
  // (a host whose cooldown ended while the job was busy with another's is not forgotten).
  std::optional<Clock::time_point> next_cooldown_end() const;
  // Takes every cooldown that ended by `now`; returns how many.
  std::size_t end_cooldowns(Clock::time_point now);
  std::size_t live() const noexcept { return workers_.size(); }
  std::uint32_t next_key() const noexcept { return next_key_; }

 private:
  struct Host {
    std::string name;
    int slots = 0;  // 0 while not listed
    int failures = 0;
    Clock::time_point usable_from{};
    std::map<int, int> incarnations;  // slot on the host -> incarnations started there
    bool reachable = true;
    bool cooling = false;  // a cooldown whose end end_cooldowns() has not taken yet
  };
  bool usable(const Host& host, Clock::time_point now) const {
    return host.reachable && now >= host.usable_from;
  }
  // Slots of each host taken by a member or a spare, counted in one pass.
  std::vector<int> used_slots() const;
  // Slots with neither on hosts usable `now`, and `n` of them at most, in host and slot order
  // (each with the incarnation its next worker gets).
  std::size_t open_slots(Clock::time_point now) const;
  std::vector<WorkerId> take_open_slots(Clock::time_point now, std::size_t n);
  // Members the job may still add, up to --max-np.
  std::size_t growth_room() const {
    return max_np_ > workers_.size() ? max_np_ - workers_.size() : 0;
  }

  std::vector<Host> hosts_;
  std::map<std::string, std::size_t> by_name_;  // index of each host in hosts_
  std::size_t max_np_;
  std::chrono::seconds cooldown_min_, cooldown_max_;
  std::map<std::uint32_t, Worker> workers_;  // by key: in start order
  std::map<std::uint32_t, Worker> spares_;   // by key: not members yet
  std::uint32_t next_key_ = 0;
};

}  // namespace hvdrun::launcher
