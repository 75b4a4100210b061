// An elastic job's hosts (elastic_members.h): a remote host that connects or fails once the job
// runs, one that cannot be used at the start, hosts the discovery script adds or removes, hosts
// that failed their preflight check; elastic Horovod's registrations and requests to re-form.
#include <algorithm>

#include "launcher/members/elastic_members.h"
#include "launcher/output/logging.h"

namespace hvdrun::launcher {

// Usable from now on; a restart under way takes it in by itself.
void ElasticMembers::host_joined(std::size_t host) {
  members_.set_reachable(host, true);
  spares_.refill();
  if (parts_.core.lifecycle().active() && members_.free_slots(Clock::now()) > 0) {
    slots_changed(SlotsChange::kAdded, "host " + parts_.pools.host_name(host) + " joined");
  }
}

// A discovered host that cannot be used: the job goes on.
bool ElasticMembers::host_failed_later(std::size_t host, const std::string& why) {
  note(std::string("warning: cannot use ") + (discovery_ ? "discovered " : "") + "host " +
       parts_.pools.host_name(host) + ": " + why);
  return true;
}

// A host that cannot be reached at the start: if the policy lets the job start without it,
// its workers are left out and the first generation is formed again from the others.
bool ElasticMembers::start_without_host(std::size_t host, const std::string& why) {
  WorkerTable& workers = parts_.workers;
  std::vector<WorkerId> lost;
  workers.for_each([&](const WorkerRecord& r) {
    if (r.id.host == host) lost.push_back(r.id);
  });
  const Action action = parts_.policy.host_unusable_at_start(workers.size() - lost.size());
  if (action.kind != Action::Kind::kContinue) return false;
  for (const auto& id : lost) drop(id);
  members_.set_reachable(host, false);
  const std::string& name = parts_.pools.host_name(host);
  note("warning: cannot use host " + name + ": " + why + "; the job starts without its " +
       plural(lost.size(), "slot"));
  auto members = members_.next_generation();
  take_ranks(members);
  const std::size_t size = members.size();
  parts_.pools.rendezvous().size = static_cast<int>(size);
  parts_.start_generation(
      {std::move(members), rdzv::Handover::kRestart, "host " + name + " cannot be used", {}});
  parts_.generations.current().size = size;  // no worker ran in it yet: it is still the first
  return true;
}

// A host that failed its preflight check joins the job's hosts (the discovery script lists it,
// or an -H job adds it): it starts in cooldown, as if a worker had failed there, and joins
// when the cooldown ends.
void ElasticMembers::cool_after_preflight(std::size_t host) {
  const auto cooldown = members_.cool_down(host, Clock::now());
  const std::string& name = members_.host_name(host);
  std::string check;
  for (const auto& [h, verdict] : parts_.run.preflight_results) {
    if (h == name) check = " (" + verdict + ")";
  }
  note("host " + name + " failed its preflight check" + check + ": unused for " +
       std::to_string(cooldown.count()) + " s");
  watch_cooldowns();
}

// Hosts new to the job (`change.added`, from `hosts`): connected if remote; one that failed its
// preflight check cools down first.
void ElasticMembers::take_in(const ElasticMembership::HostsChange& change,
                             const std::vector<HostSpec>& hosts) {
  std::vector<std::string> again, loopback;  // said in one line each, not one per host
  for (std::size_t i = 0; i < change.added.size(); ++i) {
    const std::size_t index = change.added[i];
    const HostSpec& spec = hosts[change.added_from[i]];
    const auto discovered = parts_.pools.add_discovered(index, spec);
    const bool usable =
        discovered == Pools::Discovered::kUsable || discovered == Pools::Discovered::kConnecting;
    // Before anything fills its slots: its connection, if any, is only under way.
    if (usable && preflight_cooled_.erase(spec.name) > 0) cool_after_preflight(index);
    if (discovered == Pools::Discovered::kUsable) continue;
    members_.set_reachable(index, false);  // a remote one: until its SSH connection is up
    if (discovered == Pools::Discovered::kThisMachineAgain) again.push_back(spec.name);
    if (discovered == Pools::Discovered::kLoopbackOnly) loopback.push_back(spec.name);
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
void ElasticMembers::add_preflight_failed_hosts() {
  std::vector<HostSpec> hosts = parts_.run.hosts;
  hosts.insert(hosts.end(), parts_.run.preflight_cooled.begin(), parts_.run.preflight_cooled.end());
  take_in(members_.update_hosts(hosts), hosts);
}

void ElasticMembers::on_discovered_hosts(const std::vector<HostSpec>& hosts) {
  const auto change = members_.update_hosts(hosts);
  take_in(change, hosts);
  for (const auto& gone : change.removed_spares) spares_.slot_removed(gone.key);
  spares_.refill();  // a host added may have room for the spares that did not fit
  std::string removed;
  for (const auto& gone : change.removed) {
    WorkerRecord* record = parts_.workers.find(WorkerKey{gone.key});
    if (!record || record->end()) continue;
    record->removed = true;
    removed += (removed.empty() ? "rank " : ", rank ") + std::to_string(record->slot().rank) +
               " (host " + record->slot().host + ")";
  }
  if (!removed.empty()) {
    note("the discovery script no longer lists the slots of " + removed +
         (parts_.spec.survivors_reform() ? ": they leave the job at its next commit"
                                         : ": they leave the job"));
    slots_changed(SlotsChange::kRemoved, "slots removed by the discovery script");
  } else if (members_.free_slots(Clock::now()) > 0) {
    slots_changed(SlotsChange::kAdded, "slots added by the discovery script");
  }
}

// A worker registers once, under the name its environment gave it at its start (it asks for a
// new place only after registering).
void ElasticMembers::horovod_registered(const std::string& name,
                                        horovod::WorkerRegistration registration) {
  if (!host_updates_) return;
  if (WorkerRecord* record = parts_.workers.unregistered(name)) {
    record->horovod_registered = true;
    host_updates_->registered(record->key.value, std::move(registration));
    return;
  }
  launcher_log()->info(
      "Horovod worker {} registered its notification service, but no running worker started "
      "under that name has not registered yet: it is not told of host changes",
      name);
}

bool ElasticMembers::reform_asked(std::size_t waiting) {
  JobCore& core = parts_.core;
  const Action action = parts_.policy.reform_asked(waiting, core.facts());
  core.carry_out(action);
  return action.kind == Action::Kind::kReform;
}

}  // namespace hvdrun::launcher
