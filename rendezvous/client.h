// Blocking rendezvous client used by libhvdrun in the worker process. Plain POSIX socket
// with poll() deadlines: every call has a timeout and throws hvdrun::TimeoutError naming
// what it waited for, NetworkError when the server is gone, ProtocolError on a bad frame
// or a kError reply, AbortedError when interrupted (set_interrupt).
// Once the challenge is received a reader thread owns the receiving side of the connection:
// it hands replies to the calling thread, sends a heartbeat every heartbeat interval, and
// receives the server's pushes (a generation ended: broken, or hosts updated), which it
// reports through the on_generation_end callback at once, whatever the calling thread does.
// Thread rules: requests from one thread at a time; generation_end() from any thread;
// move-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/protocol.h"

namespace hvdrun::rdzv {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  // "host:port" or "[v6addr]:port"; throws UsageError naming the text.
  static Endpoint parse(std::string_view text);
};

struct Assignment {
  std::uint32_t generation = 0;
  Assign assign;
};

// A generation end pushed by the server: `ended` is the generation that ended.
struct GenerationEndEvent {
  std::uint32_t ended = 0;
  GenerationEnd end;
};

inline constexpr std::chrono::milliseconds kDefaultHeartbeat{500};

class Client {
 public:
  // Connects (retrying refused connections until `timeout`) and reads the server's
  // challenge. Its answer goes out with the first frame sent: the first request, or else the
  // first heartbeat (so `heartbeat` must stay below the server's auth timeout, 10 s by
  // default). The server answers only a wrong secret: the first request then fails with
  // ProtocolError "authentication failed".
  Client(const Endpoint& server, std::string_view secret, std::chrono::milliseconds timeout,
         std::chrono::milliseconds heartbeat = kDefaultHeartbeat);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // Sends JOIN for the server's current generation (as of the challenge) and waits for ASSIGN
  // (or the server's kError, rethrown with its text).
  Assignment join(const Join& join, std::chrono::milliseconds timeout);
  // After the server ended this client's generation (generation_end()): joins the next one
  // on the same connection. Waits up to `end_timeout` for the end to be pushed if it has not
  // been yet, then up to `form_timeout` for the next generation to form; a next generation
  // that itself ends before it formed is followed to the one after. Throws TimeoutError if no
  // end came or nothing formed, WorkerFailedError if this worker is not a member of the next
  // generation.
  Assignment rejoin(const Join& join, std::chrono::milliseconds end_timeout,
                    std::chrono::milliseconds form_timeout);
  // The end of this client's generation (generation()), once the server pushed it.
  std::optional<GenerationEndEvent> generation_end() const;
  // Called on the reader thread for each generation end pushed; set it before join().
  void on_generation_end(std::function<void(const GenerationEndEvent&)> callback);
  // Called on the reader thread for each heartbeat: what it tells of the worker's collectives.
  // It must be quick and must not call into this client.
  void set_progress_source(std::function<std::optional<ProgressReport>()> source);
  // Key-value store, scoped by the generation of the last ASSIGN (0 before).
  void set(std::string_view key, std::string_view value, std::chrono::milliseconds timeout);
  std::string get(std::string_view key, std::chrono::milliseconds timeout);
  void barrier(std::string_view name, std::chrono::milliseconds timeout);

  // Every later wait also ends when `fd` (an abort signal's eventfd; -1: none) is readable,
  // with AbortedError; the connection is then closed, as after any error (a reply may be
  // under way), unless the server had ended this client's generation (its late replies are
  // recognised by their generation and dropped). The fd must stay open while it is set.
  void set_interrupt(int fd) noexcept;

  std::uint32_t generation() const noexcept;
  // Local address of the connection to the server: the address on the route to the
  // launcher, which the data plane advertises to other ranks.
  std::string local_address() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvdrun::rdzv
