// AuthenticatedAcceptor: a listening TCP socket whose peers must prove a secret (the node
// agents' handshake, agent_auth.h) before anything else of theirs is read. Serves the
// launcher's agent port (agent_listener.h) and the moved hvdrun's control port
// (job/moved_control.h). Each connection has a thread of its own: its proof, then the owner's
// handler (the agent's Hello, or keeping the link).
//
// Strangers cannot keep a real peer out, however many connections they hold:
//  - a peer has `proof_time` to prove the secret (a real one does in milliseconds);
//  - at most `max_unproven` connections wait for their proof at once; a connection that comes
//    when they are all taken displaces the oldest unproven one of the source address that
//    holds the most of them: one address cannot hold the slots against another, and an idle
//    stranger loses its place to anyone who comes after it;
//  - a connection that proved the secret is never displaced, and never counted as unproven;
//  - a displaced or slow peer sees its connection close before the launcher's proof; a real
//    agent then connects again (agent_connect.cpp), while a wrong proof is answered with a
//    refusal that the agent reports as such.
// Thread rules: the handler runs on the connection's thread and may block (its own deadline);
// the refusal log is called from any of the threads, one call at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

namespace hvdrun::launcher::remote {

class AuthenticatedAcceptor {
 public:
  struct Limits {
    std::size_t max_unproven = 64;
    std::chrono::milliseconds proof_time{3000};
  };
  struct Peer {
    std::string address;  // "10.0.0.2"
    std::string text;     // "10.0.0.2:41234"
  };
  using Clock = std::chrono::steady_clock;
  // The connection (blocking) of a peer that proved the secret, on its thread.
  using Handler = std::function<void(UniqueFd fd, const Peer& peer)>;
  // A line for the log: a connection closed before its proof, and why.
  using RefusalLog = std::function<void(const std::string& line)>;

  // Accepts on `listening` (bound and listening) from now on.
  AuthenticatedAcceptor(UniqueFd listening, std::string secret, Limits limits, Handler handler,
                        RefusalLog refusal_log);
  // Closes the port, then every connection still served (their reads end), and joins every
  // thread: no handler runs after it.
  ~AuthenticatedAcceptor();
  AuthenticatedAcceptor(const AuthenticatedAcceptor&) = delete;
  AuthenticatedAcceptor& operator=(const AuthenticatedAcceptor&) = delete;

  // Takes no more connections: the port is closed (a connect is refused); those being served
  // go on.
  void close_port();
  // Connections waiting for their proof now (for tests and benchmarks).
  std::size_t unproven() const;

 private:
  struct Served {
    std::thread thread;
    std::string address;
    std::uint64_t order = 0;  // accept order: lower is older
    bool proven = false;
    bool displaced = false;
    UniqueFd shut;  // a duplicate of the connection, for shutdown() only
  };
  void accept_loop();
  void serve(UniqueFd fd, Peer peer, std::uint64_t order);
  void log(const std::string& line);
  // With the lock held: room for one more unproven connection, displacing one if need be;
  // false when every slot is held by a proven peer or a thread still ending.
  bool make_room();
  void join_finished(std::unique_lock<std::mutex>& lock);

  const std::string secret_;
  const Limits limits_;
  const Handler handler_;
  const RefusalLog refusal_log_;
  UniqueFd listen_;
  UniqueFd stop_;         // eventfd: the accept loop ends
  std::mutex log_mutex_;  // one refusal_log_ call at a time
  mutable std::mutex mutex_;
  std::condition_variable changed_;         // an entry left served_
  std::map<std::uint64_t, Served> served_;  // by accept order
  std::vector<std::thread> finished_;       // threads that left served_, joined by the accept loop
  std::uint64_t next_order_ = 0;
  bool stopping_ = false;
  std::thread accept_thread_;  // last
};

}  // namespace hvdrun::launcher::remote
