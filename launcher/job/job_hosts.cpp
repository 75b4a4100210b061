// The job's hosts (job.h): SSH hosts that connect or fail, hosts the discovery script adds or
// removes, a worker whose host stopped answering.
#include <signal.h>

#include <algorithm>

#include "launcher/job/job.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

// hvdrun's stdin reaches only a rank 0 of this machine: a file given to a job whose rank 0 is
// remote would be lost without a word. (Not a pipe: `ssh head hvdrun ...` has one, unused.)
void Job::warn_if_stdin_not_read() const {
  if (!pools_.rank_zero_stdin().is_file()) return;
  const WorkerRecord* rank0 = workers_.rank_zero();
  if (!rank0 || std::find(remote_.begin(), remote_.end(), rank0->id.host) == remote_.end()) return;
  note(
      "warning: hvdrun's stdin is not read: it reaches only a rank 0 on this machine, and "
      "rank 0 runs on host " +
      rank0->slot().host);
}

void Job::host_ready(std::size_t host, remote::HostReady ready) {
  // A discovered host of an elastic job that runs.
  const bool later = membership_ && (state_.active() || state_.is(JobState::kRestarting));
  if ((!state_.is(JobState::kConnecting) && !later) || outcome_) return;
  if (spec_.verbose) {
    if (ready.phases.empty()) {  // an agent that connected to hvdrun (srun)
      note("node agent of " + ready.where + " connected (route from " + ready.local_addr + ")");
    } else {
      note(ready.where + " as " + ready.user + ": " + ssh::describe_phases(ready.phases) +
           " (route from " + ready.local_addr + ")");
    }
    if (!ready.host_key_note.empty()) note(ready.host_key_note);
  }
  publisher_.publish(&JobEvents::host_connected, host, pools_.host_name(host), launched_,
                     ready.local_addr);
  pools_.host_connected(host, std::move(ready));
  if (later) {  // usable from now on; a restart under way takes it in by itself
    membership_->set_reachable(host, true);
    spares_.refill();
    if (state_.active() && membership_->free_slots(Clock::now()) > 0) {
      slots_changed(SlotsChange::kAdded, "host " + pools_.host_name(host) + " joined");
    }
    return;
  }
  if (pools_.connected_count() + failed_hosts_ == remote_.size()) start_workers();
}

void Job::host_failed(std::size_t host, const remote::HostFailed& failed) {
  if (state_.is(JobState::kFinished)) return;
  if (state_.is(JobState::kConnecting)) {
    unusable_hosts_.emplace_back(pools_.host_name(host), failed.message);
  }
  if (!state_.is(JobState::kConnecting) && membership_) {  // a discovered host: the job goes on
    note(std::string("warning: cannot use ") + (discovery_ ? "discovered " : "") + "host " +
         pools_.host_name(host) + ": " + failed.message);
    return;
  }
  if (state_.is(JobState::kConnecting) && !outcome_ && start_without_host(host, failed.message)) {
    if (pools_.connected_count() + ++failed_hosts_ == remote_.size()) start_workers();
    return;
  }
  const std::string why =
      "cannot start the ranks of host " + pools_.host_name(host) + ": " + failed.message;
  fail(Outcome::failed(Outcome::Kind::kHostFailed, why), why);
  if (state_.is(JobState::kConnecting)) enter(JobState::kFinished);  // nothing runs anywhere yet
}

// A host that cannot be reached at the start: if the policy lets the job start without it,
// its workers are left out and the first generation is formed again from the others.
bool Job::start_without_host(std::size_t host, const std::string& why) {
  std::vector<WorkerId> lost;
  workers_.for_each([&](const WorkerRecord& r) {
    if (r.id.host == host) lost.push_back(r.id);
  });
  const Action action = policy_->host_unusable_at_start(workers_.size() - lost.size());
  if (action.kind != Action::Kind::kContinue || !membership_) return false;
  for (const auto& id : lost) {
    membership_->remove(workers_.find(id)->key.value);
    workers_.erase(id);
  }
  membership_->set_reachable(host, false);
  const std::string& name = pools_.host_name(host);
  note("warning: cannot use host " + name + ": " + why + "; the job starts without its " +
       plural(lost.size(), "slot"));
  auto members = membership_->next_generation();
  take_ranks(members);
  const std::size_t size = members.size();
  pools_.rendezvous().size = static_cast<int>(size);
  start_generation(
      {std::move(members), rdzv::Handover::kRestart, "host " + name + " cannot be used", {}});
  generations_.current().size = size;  // no worker ran in it yet: it is still the first
  return true;
}

// A host that failed its preflight check joins the job's hosts (the discovery script lists it,
// or an -H job adds it): it starts in cooldown, as if a worker had failed there, and joins
// when the cooldown ends.
void Job::cool_after_preflight(std::size_t host) {
  const auto cooldown = membership_->cool_down(host, Clock::now());
  const std::string& name = membership_->host_name(host);
  std::string check;
  for (const auto& [h, verdict] : spec_.preflight.results) {
    if (h == name) check = " (" + verdict + ")";
  }
  note("host " + name + " failed its preflight check" + check + ": unused for " +
       std::to_string(cooldown.count()) + " s");
  watch_cooldowns();
}

// Hosts new to the job (`change.added`, from `hosts`): connected if remote; one that failed its
// preflight check cools down first.
void Job::take_in(const ElasticMembership::HostsChange& change,
                  const std::vector<HostSpec>& hosts) {
  std::vector<std::string> again, loopback;  // said in one line each, not one per host
  for (std::size_t i = 0; i < change.added.size(); ++i) {
    const std::size_t index = change.added[i];
    const HostSpec& spec = hosts[change.added_from[i]];
    const auto discovered = pools_.add_discovered(index, spec);
    const bool usable = discovered == WorkerPools::Discovered::kUsable ||
                        discovered == WorkerPools::Discovered::kConnecting;
    // Before anything fills its slots: its connection, if any, is only under way.
    if (usable && preflight_cooled_.erase(spec.name) > 0) cool_after_preflight(index);
    if (discovered == WorkerPools::Discovered::kUsable) continue;
    membership_->set_reachable(index, false);  // a remote one: until its SSH connection is up
    if (discovered == WorkerPools::Discovered::kThisMachineAgain) again.push_back(spec.name);
    if (discovered == WorkerPools::Discovered::kLoopbackOnly) loopback.push_back(spec.name);
  }
  if (!again.empty()) {
    note("warning: discovered " + plural(again.size(), "host") + " " + some_of(again) +
         (again.size() == 1 ? " is" : " are") +
         " this machine, already one of the job's hosts: not used (list this machine once "
         "with its total slots)");
  }
  if (!loopback.empty()) {
    note("warning: discovered " + plural(loopback.size(), "host") + " " + some_of(loopback) +
         (loopback.size() == 1 ? " is" : " are") +
         " remote but the job started with this machine only, so its rendezvous listens on "
         "loopback: not used (give --network-interface or --rendezvous-addr to allow remote "
         "hosts)");
  }
}

// An elastic job of -H hosts: the hosts that failed their preflight check are added now, in
// cooldown (a remote one's connection starts), as a discovery script would add them.
void Job::add_preflight_failed_hosts() {
  std::vector<HostSpec> hosts = spec_.hosts;
  hosts.insert(hosts.end(), spec_.preflight.cooled.begin(), spec_.preflight.cooled.end());
  take_in(membership_->update_hosts(hosts), hosts);
}

void Job::on_discovered_hosts(const std::vector<HostSpec>& hosts) {
  const auto change = membership_->update_hosts(hosts);
  take_in(change, hosts);
  for (const auto& gone : change.removed_spares) spares_.slot_removed(gone.key);
  spares_.refill();  // a host added may have room for the spares that did not fit
  std::string removed;
  for (const auto& gone : change.removed) {
    WorkerRecord* record = workers_.find(WorkerKey{gone.key});
    if (!record || record->end()) continue;
    record->removed = true;
    removed += (removed.empty() ? "rank " : ", rank ") + std::to_string(record->slot().rank) +
               " (host " + record->slot().host + ")";
  }
  if (!removed.empty()) {
    note("the discovery script no longer lists the slots of " + removed +
         (spec_.survivors_reform() ? ": they leave the job at its next commit"
                                   : ": they leave the job"));
    slots_changed(SlotsChange::kRemoved, "slots removed by the discovery script");
  } else if (membership_->free_slots(Clock::now()) > 0) {
    slots_changed(SlotsChange::kAdded, "slots added by the discovery script");
  }
}

// The rendezvous heard nothing from the worker for too long: it is killed, and its end is a
// failure like any other. In a static job, which that failure ends, the ranks' stacks are
// collected first (the lost one's among them: a rank stuck in its own code, or stopped).
void Job::worker_lost(std::uint32_t key, const std::string& why) {
  if (!state_.active()) return;
  if (spares_.lost(key, why)) return;
  WorkerRecord* record = workers_.find(WorkerKey{key});
  if (!record || record->end()) return;
  if (!membership_ && state_.is(JobState::kRunning)) {
    collect_stacks("heartbeat timeout", {record->slot().rank},
                   [this, key, why] { kill_lost(key, why); });
    return;
  }
  kill_lost(key, why);
}

// The lost worker is killed, unless it ended meanwhile (then its own end is its failure).
void Job::kill_lost(std::uint32_t key, const std::string& why) {
  WorkerRecord* record = workers_.find(WorkerKey{key});
  if (!state_.active() || !record || record->end()) return;
  record->lost = "missed its heartbeats (" + why + "): killed";
  pools_.signal(record->id, SIGKILL);
  if (pools_.connected(record->id.host)) {
    // Over a cut-off network neither the kill nor the end may get through: the worker ends
    // here (a later report of its end is ignored).
    const WorkerId lost = record->id;
    worker_exited(lost, ProcessEnd::lost_connection("host " + pools_.host_name(lost.host) +
                                                    " stopped answering"));
  }
}

}  // namespace hvdrun::launcher
