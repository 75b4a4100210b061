// The rendezvous faces (rendezvous_faces.h).
#include "launcher/servers/rendezvous_faces.h"

#include <algorithm>
#include <charconv>

namespace hvdrun::launcher {

horovod::KvPlan horovod_plan(const std::vector<Slot>& slots) {
  horovod::KvPlan plan;
  plan.global_size = static_cast<int>(slots.size());
  for (const auto& s : slots) {
    plan.local_sizes[s.host] = s.local_size;
    plan.cross_sizes[s.local_rank] = s.cross_size;
  }
  return plan;
}

horovod::KvServerOptions RendezvousFaces::forwarding(horovod::KvServerOptions options,
                                                     RendezvousEvents& events) {
  options.on_first_put = [&events](const std::string& peer) { events.horovod_in_use(peer); };
  options.admit = [this](const boost::asio::ip::tcp::endpoint& local,
                         const boost::asio::ip::tcp::endpoint& peer) {
    return gate_.admit(local, peer);
  };
  options.on_reform_asked = [&events](std::size_t waiting) {
    return events.horovod_reform_asked(waiting);
  };
  options.on_registered = [&events](const std::string& name,
                                    horovod::WorkerRegistration registration) {
    events.horovod_registered(name, std::move(registration));
  };
  options.on_spare_waiting = [&events](const std::string& name) {
    if (const auto key = horovod_spare_key(name)) events.spare_parked(*key);
  };
  return options;
}

RendezvousFaces::RendezvousFaces(boost::asio::io_context& io, rdzv::ServerOptions options,
                                 horovod::KvServerOptions kv_options,
                                 const std::vector<Slot>& slots, RendezvousEvents& events)
    : secret_(options.secret),
      gate_([&events](const std::string& address) { return events.is_job_host(address); }),
      server_(io, std::move(options),
              rdzv::ServerCallbacks{
                  [&events](const rdzv::JobError& error) { events.rendezvous_failed(error); },
                  [&events] { events.all_joined(); },
                  [&events](std::uint32_t worker, const std::string& why) {
                    events.worker_lost(worker, why);
                  },
                  [&events](std::uint32_t spare) { events.spare_parked(spare); }}),
      horovod_(io, forwarding(std::move(kv_options), events), horovod_plan(slots)),
      master_port_(PortReservation::reserve()) {}

std::uint16_t RendezvousFaces::start_generation(GenerationStart start) {
  std::vector<Slot> next;
  for (const auto& m : start.members) next.push_back(m.slot);
  std::sort(next.begin(), next.end(), [](const Slot& a, const Slot& b) { return a.rank < b.rank; });
  server_.start_generation(std::move(start.members), start.how, std::move(start.reason));
  auto kv_plan = horovod_plan(next);
  kv_plan.survivors = std::move(start.survivors);
  horovod_.reset(std::move(kv_plan));
  master_port_.reset();
  master_port_.emplace(PortReservation::reserve());
  return master_port_->port();
}

void RendezvousFaces::close() {
  server_.close();
  horovod_.close();
}

std::vector<std::uint32_t> RendezvousFaces::silent_horovod_spares(
    std::chrono::milliseconds limit) const {
  std::vector<std::uint32_t> keys;
  for (const std::string& name : horovod_.silent_spares(limit)) {
    if (const auto key = horovod_spare_key(name)) keys.push_back(*key);
  }
  return keys;
}

std::optional<std::uint32_t> horovod_spare_key(std::string_view name) {
  constexpr std::string_view kPrefix = "spare.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size());
  std::uint32_t key = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), key);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return key;
}

}  // namespace hvdrun::launcher
