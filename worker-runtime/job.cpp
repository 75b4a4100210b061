// Runtime (job.h): rendezvous JOIN/ASSIGN, then the ring, then the backend choice and the
// NCCL communicator when chosen.
#include "worker-runtime/job.h"

#include <unistd.h>

#include "hvdrun/error.h"
#include "worker-runtime/backend_setup.h"
#include "worker-runtime/data_address.h"
#include "worker-runtime/error_context.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/rdzv_failure_board.h"

namespace hvdrun {
namespace {

void check_assignment(const rdzv::Assign& a) {
  if (a.size < 1 || a.rank < 0 || a.rank >= a.size || a.local_size < 1 || a.local_rank < 0 ||
      a.local_rank >= a.local_size || a.cross_size < 1 || a.cross_rank < 0 ||
      a.cross_rank >= a.cross_size) {
    throw ProtocolError("assignment is inconsistent: rank " + std::to_string(a.rank) + "/" +
                        std::to_string(a.size) + ", local " + std::to_string(a.local_rank) + "/" +
                        std::to_string(a.local_size) + ", cross " + std::to_string(a.cross_rank) +
                        "/" + std::to_string(a.cross_size));
  }
}

// How long a survivor waits in re-join, for the end of its generation and then for the next
// to form. The launcher decides each within --elastic-timeout (slots to come back; the next
// generation to form); the worker's waits last longer, so that it never gives up first with a
// less telling error of its own. A launcher that is gone closes the connection, which ends
// either wait at once.
std::chrono::milliseconds rejoin_wait(const Options& options) {
  constexpr std::chrono::seconds kLauncherDecidesFirst{10};
  return options.elastic_timeout + kLauncherDecidesFirst;
}

// How long a warm spare's first Join may wait for its promotion: the job's whole life, in
// practice. The launcher ends it sooner (NotMemberError when the spare is not needed, or the
// connection closed when the launcher is gone).
constexpr std::chrono::hours kSpareWait{24 * 30};

}  // namespace

Runtime::Runtime(Options options) : options_(std::move(options)) {
  const Options& o = options_;
  configure_runtime_log(o.log_level, o.hostname, o.rendezvous.empty() ? 0 : -1);
  if (o.rendezvous.empty()) {
    try {
      communicator_ = form_world_of_one();
    } catch (const Error&) {
      rethrow_with_prefix(std::current_exception(), "hvdrun::init (world of one): ");
    }
    return;
  }
  try {
    communicator_ = form_until_formed(false, {});
  } catch (const Error&) {
    rethrow_with_prefix(std::current_exception(), "hvdrun::init (rendezvous " + o.rendezvous +
                                                      ", slot " + std::to_string(o.slot) + "): ");
  }
}

Runtime::~Runtime() {
  communicator_.reset();
  client_.reset();  // joins the reader thread: no callback runs after this
}

bool Runtime::generation_ended() const {
  return client_ && client_->generation_end().has_value();
}

void Runtime::reform() {
  if (!options_.elastic || !client_) {
    throw UsageError("hvdrun: re-forming needs an elastic job (hvdrun --min-np or --max-np)");
  }
  const auto start = tcp::Clock::now();
  const auto end = client_->generation_end();
  const std::uint32_t ended = end ? end->ended : client_->generation();  // the one left last
  client_->set_interrupt(-1);  // the old generation's signal: raised, and about to be closed
  PreviousDevice previous{communicator_->take_device_backend(), generation_};
  communicator_.reset();
  try {
    communicator_ = form_until_formed(true, std::move(previous));
  } catch (const Error&) {
    rethrow_with_prefix(std::current_exception(),
                        "hvdrun: re-forming after generation " + std::to_string(ended) + " ended" +
                            (end ? " (" + end->end.reason + ")" : std::string()) + ": ");
  }
  runtime_log().info(
      "re-formed as rank {}/{} in {} ms", communicator_->topology().rank,
      communicator_->topology().size,
      std::chrono::duration_cast<std::chrono::milliseconds>(tcp::Clock::now() - start).count());
}

std::unique_ptr<Communicator> Runtime::form_until_formed(bool rejoin, PreviousDevice previous) {
  for (;;) {
    const auto before = assigned_;
    try {
      return form_generation(rejoin, std::move(previous));
    } catch (const Error& e) {
      // In an elastic job, the generation being formed broke (another worker failed
      // meanwhile, the first generation included): re-join, which waits (see rejoin_wait)
      // for the launcher to end it and form the next. Each retry needs a newer assignment,
      // so the retries are bounded.
      if (!options_.elastic || !e.generation_failure() || assigned_ == before) throw;
      runtime_log().info("generation {} failed while forming ({}): re-forming again", *assigned_,
                         e.what());
      previous = {};
      rejoin = true;
      client_->set_interrupt(-1);
    }
  }
}

void Runtime::watch(std::shared_ptr<AbortSignal> abort, std::uint32_t generation) {
  std::lock_guard lock(watch_mutex_);
  watched_abort_ = std::move(abort);
  watched_generation_ = generation;
}

void Runtime::on_generation_end(const rdzv::GenerationEndEvent& event) {
  if (event.end.kind != rdzv::EndKind::kBroken) return;  // hosts updated: at the next commit
  std::lock_guard lock(watch_mutex_);
  if (watched_abort_ && event.ended >= watched_generation_) {
    watched_abort_->raise("generation " + std::to_string(event.ended) +
                          " ended: " + event.end.reason);
  }
}

std::unique_ptr<Communicator> Runtime::form_world_of_one() {
  auto communicator = Communicator::single_process();
  attach_device_backend(*communicator, nullptr, options_);
  return communicator;
}

std::unique_ptr<Communicator> Runtime::form_generation(bool rejoin, PreviousDevice previous) {
  const Options& options = options_;
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto start = tcp::Clock::now();
  const DataAddress data = options.network_interface.empty()
                               ? DataAddress{}
                               : resolve_data_address(options.network_interface, ipv4_interfaces());
  if (!client_) {  // the first generation opens the connection that later ones reuse
    client_ = std::make_unique<rdzv::Client>(rdzv::Endpoint::parse(options.rendezvous),
                                             options.secret, options.start_timeout);
    client_->on_generation_end(
        [this](const rdzv::GenerationEndEvent& event) { on_generation_end(event); });
    if (options.timeline_collectives) progress_.time_every_collective();
    client_->set_progress_source([this] {
      auto report = progress_.report();
      if (report) report->samples = progress_.take_samples();
      return report;
    });
  }
  // Without an interface setting, the data socket listens only on the address it advertises
  // (the route to the launcher: loopback for a local job), not on every address.
  const std::string advertise = data.advertise.empty() ? client_->local_address() : data.advertise;
  tcp::Listener listener = tcp::Listener::bind(data.advertise.empty() ? advertise : data.bind, 0);
  rdzv::Join request;
  request.slot = options.slot;
  request.pid = static_cast<std::uint32_t>(::getpid());
  request.host = options.hostname;
  request.data_addr = advertise;
  request.data_port = listener.port();
  progress_.reset();  // the next generation numbers its collectives from 1
  rdzv::Assignment assignment =
      rejoin ? client_->rejoin(request, rejoin_wait(options), rejoin_wait(options))
             : client_->join(request, options.spare && !assigned_
                                          ? std::chrono::milliseconds(kSpareWait)
                                          : options.start_timeout);
  const auto assigned = tcp::Clock::now();
  assigned_ = assignment.generation;
  const rdzv::Assign& a = assignment.assign;
  check_assignment(a);
  configure_runtime_log(options.log_level, options.hostname, a.rank);
  runtime_log().debug("joined as rank {}/{} (generation {}); data socket {}:{}", a.rank, a.size,
                      assignment.generation, request.data_addr, request.data_port);

  // From here on, the end of this generation aborts its waits: the rendezvous ones (the
  // board's entry among them) and the ring setup's.
  auto abort = std::make_shared<AbortSignal>();
  client_->set_interrupt(abort->fd());
  watch(abort, assignment.generation);
  if (const auto end = client_->generation_end(); end && end->end.kind == rdzv::EndKind::kBroken) {
    on_generation_end(*end);  // it ended before the watch was set
  }
  // The board's entry exists before the ring connects (see rdzv_failure_board.h).
  std::shared_ptr<tcp::FailureBoard> board;
  if (a.size > 1) {
    board = std::make_shared<RendezvousFailureBoard>(*client_, a.rank, options.start_timeout);
  }
  const rdzv::PeerAddr self{request.data_addr, request.data_port};
  auto ring = std::make_unique<tcp::Ring>(a.rank, a.size, tcp::RingAddresses{self, a.prev, a.next},
                                          std::move(listener), options.secret,
                                          assignment.generation, options.timeout, abort.get());
  ring->set_failure_board(std::move(board));
  const Topology topology{a.rank, a.size, a.local_rank, a.local_size, a.cross_rank, a.cross_size};
  auto communicator = std::make_unique<Communicator>(topology, std::move(ring), std::move(abort));
  attach_device_backend(*communicator, client_.get(), options, std::move(previous));
  communicator->ring().number_from_here();
  generation_ = assignment.generation;
  const auto us = [](auto d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  };
  runtime_log().info(
      "rank {}/{} (local {}/{}, cross {}/{}) ready in {} us: assignment after {} us, ring in {} us",
      a.rank, a.size, a.local_rank, a.local_size, a.cross_rank, a.cross_size,
      us(tcp::Clock::now() - start), us(assigned - start), us(tcp::Clock::now() - assigned));
  return communicator;
}

}  // namespace hvdrun
