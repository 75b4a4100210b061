// RendezvousFaces: the launcher's rendezvous, every face of it in one object: hvdrun's own
// rendezvous server (rendezvous/server.h), Horovod's HTTP rendezvous (horovod/kv_server.h) and
// the MASTER_PORT reservation for torch.distributed. Horovod's port serves only processes of
// hvdrun's user on this machine and the job's hosts (PeerGate). Built before anything that
// needs their ports; start_generation() moves all three to a new generation together; what they
// hear goes to the job through one interface, RendezvousEvents. io thread only; the events come on
// it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/slot.h"
#include "launcher/horovod/kv_server.h"
#include "launcher/horovod/updates/worker_registration.h"
#include "launcher/servers/peer_check.h"
#include "launcher/servers/port_reservation.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {

// What the rendezvous servers tell the job.
class RendezvousEvents {
 public:
  // The rendezvous failed (the start timeout, a mismatch): the job fails.
  virtual void rendezvous_failed(const rdzv::JobError& error) = 0;
  // Every worker of the generation joined.
  virtual void all_joined() = 0;
  // The worker of `key` missed its heartbeats for `why`.
  virtual void worker_lost(std::uint32_t key, const std::string& why) = 0;
  // A worker stored a key in Horovod's rendezvous (from `peer`), the first time.
  virtual void horovod_in_use(const std::string& peer) = 0;
  // Horovod workers (`waiting` of them) asked for their places in a next generation though
  // none exited; returns whether the job re-forms.
  virtual bool horovod_reform_asked(std::size_t waiting) = 0;
  // Whether `address` is one of the job's hosts (as hvdrun connected to it): who may use
  // Horovod's rendezvous from another machine.
  virtual bool is_job_host(const std::string& address) const = 0;
  // The warm spare of `key` waits for a place (parked in its join, or asking Horovod's
  // rendezvous for its rank).
  virtual void spare_parked(std::uint32_t key) = 0;
  // The Horovod worker called `name` registered its notification service.
  virtual void horovod_registered(const std::string& name,
                                  horovod::WorkerRegistration registration) = 0;

 protected:
  ~RendezvousEvents() = default;
};

// A new generation: its members, how it takes over, and why; `survivors`: each member that
// ran in the generation that ended, by its Horovod name there ("<HOROVOD_HOSTNAME>:
// <HOROVOD_LOCAL_RANK>"), to its slot in this one.
// A warm spare's name in Horovod's rank_and_size query: "spare.<key>".
inline std::string horovod_spare_name(std::uint32_t key) {
  return "spare." + std::to_string(key);
}
// The key in a spare's Horovod name (none: not "spare.<key>").
std::optional<std::uint32_t> horovod_spare_key(std::string_view name);

struct GenerationStart {
  std::vector<rdzv::Member> members;
  rdzv::Handover how = rdzv::Handover::kRestart;
  std::string reason;
  std::map<std::string, Slot> survivors;
};

class RendezvousFaces {
 public:
  // Starts both servers (hvdrun's with `options`, Horovod's with `kv_options` for the first
  // generation's `slots`) and reserves the first MASTER_PORT. `events` outlives this.
  RendezvousFaces(boost::asio::io_context& io, rdzv::ServerOptions options,
                  horovod::KvServerOptions kv_options, const std::vector<Slot>& slots,
                  RendezvousEvents& events);

  std::uint16_t port() const noexcept { return server_.port(); }
  // What the current generation's members last said of their collectives (stall_check.h).
  std::vector<rdzv::MemberProgress> progress() const { return server_.progress(); }
  std::uint32_t generation() const noexcept { return server_.generation(); }
  // The timed collectives received since the last call (stragglers.h).
  std::vector<rdzv::TimedCollective> take_samples() { return server_.take_samples(); }
  std::uint16_t horovod_port() const noexcept { return horovod_.port(); }
  const std::string& secret() const noexcept { return secret_; }
  std::uint16_t master_port() const noexcept { return master_port_->port(); }

  // Moves every face to the next generation; returns its MASTER_PORT (a fresh one: the old
  // one may still be in TIME_WAIT).
  std::uint16_t start_generation(GenerationStart start);
  // Warm spares (rdzv::Server::add_spare, dismiss_spare): libhvdrun workers parked at their
  // join until a generation has them.
  void add_spare(std::uint32_t key) { server_.add_spare(key); }
  void dismiss_spare(std::uint32_t key, const std::string& why) {
    server_.dismiss_spare(key, why);
    horovod_.dismiss_spare(horovod_spare_name(key));
  }
  // Horovod spares whose queries stopped for `limit` (KvServer::silent_spares), by key.
  std::vector<std::uint32_t> silent_horovod_spares(std::chrono::milliseconds limit) const;
  // The job is over: both servers stop.
  void close();

 private:
  horovod::KvServerOptions forwarding(horovod::KvServerOptions options, RendezvousEvents& events);
  std::string secret_;
  PeerGate gate_;  // before horovod_: its admission check
  rdzv::Server server_;
  horovod::KvServer horovod_;
  std::optional<PortReservation> master_port_;
};

// Sizes of Horovod's global, local_<host> and cross_<local_rank> scopes.
horovod::KvPlan horovod_plan(const std::vector<Slot>& slots);

}  // namespace hvdrun::launcher
