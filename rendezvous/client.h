// Blocking rendezvous client used by libhvdrun in the worker process. Plain POSIX socket
// with poll() deadlines: every call has a timeout and throws hvdrun::TimeoutError naming
// what it waited for, NetworkError when the server is gone, ProtocolError on a bad frame
// or a kError reply, AbortedError when interrupted (set_interrupt). Thread rules: one thread at a
// time; move-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
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

class Client {
 public:
  // Connects (retrying refused connections until `timeout`) and authenticates.
  Client(const Endpoint& server, std::string_view secret, std::chrono::milliseconds timeout);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // Sends JOIN and waits for ASSIGN (or the server's kError, rethrown with its text).
  Assignment join(const Join& join, std::chrono::milliseconds timeout);
  // Key-value store, scoped by the generation of the last ASSIGN (0 before).
  void set(std::string_view key, std::string_view value, std::chrono::milliseconds timeout);
  std::string get(std::string_view key, std::chrono::milliseconds timeout);
  void barrier(std::string_view name, std::chrono::milliseconds timeout);

  // Every later wait also ends when `fd` (an abort signal's eventfd; -1: none) is readable,
  // with AbortedError; the connection is then closed, as after any error (a reply may be
  // under way). The fd must stay open while it is set.
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
