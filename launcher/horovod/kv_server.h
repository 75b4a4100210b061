// KvServer: the HTTP key-value rendezvous that real Horovod gloo workers (horovod 0.28)
// talk to: GET/PUT/DELETE /<scope>/<key>, one request per TCP connection, served on the
// caller's io_context. Settings: KvServerOptions (address, port, limits) and the KvPlan of
// scope sizes. Elastic Horovod's rank_and_size query (rank_queries.h) is answered from each
// generation's KvPlan::survivors; in a static job it gets the "not in this job" answer, so
// such a worker fails at once instead of hanging.
// Thread: construct, call and destroy on the io_context's thread (or before it runs); no
// locks. Lifetime: close() or the destructor stops accepting and closes every connection;
// connections then unwind on the io_context, which must outlive the object.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "launcher/horovod/kv_plan.h"
#include "launcher/horovod/updates/worker_registration.h"

namespace hvdrun::launcher::horovod {

class KvServerCore;

struct KvServerOptions {
  std::string bind_address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port
  std::size_t max_body_bytes = 8u << 20;
  std::size_t max_header_bytes = 8u << 10;
  std::size_t max_connections = 4096;  // at the cap, new connections wait in the backlog
  std::size_t max_stored_bytes = 256u << 20;
  std::chrono::milliseconds request_timeout{10'000};  // the whole request, then the reply
  // 0 (a static job): GET /rank_and_size is answered "not in the job" at once. Else (an
  // elastic job) a query that the current generation does not answer is held until the next
  // generation (reset()) answers it, or for at most this long (then 503).
  std::chrono::milliseconds rank_query_hold{0};
  // A warm spare's query (spare.<key>) is held this long at most (0: rank_query_hold), then
  // answered 503, and the spare asks again at once: its queries are its heartbeats
  // (KvServer::silent_spares).
  std::chrono::milliseconds spare_query_hold{0};
  // Called when every worker that registered (hvd.elastic.run) waits for a next generation
  // that the launcher has not formed: a collective failed and no worker exited. Returns
  // whether the launcher re-forms (reset() then answers them); until it does, each further
  // waiting query calls it again.
  std::function<bool(std::size_t waiting)> on_reform_asked;
  // Called for each worker that registers its notification service (hvd.elastic.run's
  // PUT /worker_addresses/<name>, `name` "<HOROVOD_HOSTNAME>:<HOROVOD_LOCAL_RANK>") with a body
  // that decodes; one that does not is logged and only stored.
  std::function<void(const std::string& name, WorkerRegistration registration)> on_registered;
  // Called at a warm spare's first query (GET /rank_and_size/spare.<key>, `name`
  // "spare.<key>"): it waits for a place.
  std::function<void(const std::string& name)> on_spare_waiting;
  // Called once, at the first PUT stored, with the client's address: a Horovod worker (or
  // someone posing as one: the port takes no credentials) is in the job.
  std::function<void(const std::string& peer)> on_first_put;
  // Called for each accepted connection before anything of it is read, with its two ends:
  // empty to serve it, else why not (it is closed at once; the reason is logged, rate-limited).
  std::function<std::string(const boost::asio::ip::tcp::endpoint& local,
                            const boost::asio::ip::tcp::endpoint& peer)>
      admit;
};

// A snapshot for tests and diagnostics.
struct KvServerStats {
  std::size_t open_connections = 0;
  std::size_t peak_connections = 0;
  std::uint64_t requests = 0;  // requests read and answered by the store (any status)
  std::size_t stored_bytes = 0;
  std::size_t stored_keys = 0;
  std::uint64_t refused_body = 0;       // over max_body_bytes
  std::uint64_t refused_header = 0;     // over max_header_bytes
  std::uint64_t refused_stored = 0;     // PUTs over max_stored_bytes
  std::uint64_t refused_peers = 0;      // connections that KvServerOptions::admit refused
  std::uint64_t connection_pauses = 0;  // times accepting paused at max_connections
  std::uint64_t timeouts = 0;           // connections closed by request_timeout
  std::uint64_t bad_requests = 0;       // malformed, bad path or method
  std::uint64_t elastic_queries = 0;    // rank_and_size GETs of a static job
  std::size_t held_queries = 0;         // rank_and_size GETs waiting for the next generation
};

class KvServer {
 public:
  // Binds and starts accepting. Throws hvdrun::NetworkError (address:port, call, reason).
  KvServer(boost::asio::io_context& io, KvServerOptions options, KvPlan plan);
  ~KvServer();
  KvServer(const KvServer&) = delete;
  KvServer& operator=(const KvServer&) = delete;

  std::uint16_t port() const noexcept;
  // Wipes every scope and takes the sizes of `plan` (a restart, an elastic re-formation),
  // and answers the held rank_and_size queries from its survivors.
  void reset(KvPlan plan);
  // Warm spares ask GET /rank_and_size/spare.<key> (hvdrun's Python hook, in their first
  // hvd.init()): the query is held across generations until one answers it (KvPlan::survivors
  // has its name) or dismiss_spare(name) answers "not in the job".
  void dismiss_spare(const std::string& name);
  // The spares that asked once and then neither asked again nor had a query held for `limit`
  // (stopped, or hung): their heartbeats lapsed.
  std::vector<std::string> silent_spares(std::chrono::milliseconds limit) const;
  void close();
  KvServerStats stats() const;

 private:
  std::shared_ptr<KvServerCore> core_;
};

}  // namespace hvdrun::launcher::horovod
