// Test helpers: a rendezvous server on 127.0.0.1:0 driven by a background io_context
// thread, slot tables, and a raw socket connection for sending hand-made frames.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "rendezvous/client.h"
#include "rendezvous/protocol.h"
#include "rendezvous/server.h"
#include "tests/support/io_thread.h"

namespace hvdrun::rdzv::test {

inline constexpr std::string_view kSecret = "0123456789abcdef-test-secret";
inline constexpr std::chrono::milliseconds kTimeout{10000};

// n slots, rank = slot, on hosts of `per_host` slots named "host0", "host1", ...
std::vector<Slot> make_slots(int n, int per_host = 1000000);
// Server options with make_slots(n) and every other setting at its default.
ServerOptions slot_options(int n);

// A loopback port that was free a moment ago (bound to port 0, then closed).
std::uint16_t unused_port();

// A frame header written by hand (generation 0) whose length field says `length`.
std::vector<std::uint8_t> frame_header(MsgType type, std::uint32_t length);

class ServerThread {
 public:
  explicit ServerThread(ServerOptions options, ServerCallbacks callbacks = {});

  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_}; }
  std::size_t joined() {
    return io_.on_io([](Server& s) { return s.joined(); });
  }
  void close() {
    io_.on_io([](Server& s) { s.close(); });
  }
  void start_generation(std::vector<Slot> slots) {
    io_.on_io([&](Server& s) { s.start_generation(std::move(slots)); });
  }
  std::uint32_t start_generation(std::vector<Member> members, Handover how, std::string reason) {
    return io_.on_io(
        [&](Server& s) { return s.start_generation(std::move(members), how, std::move(reason)); });
  }
  void add_spare(std::uint32_t key) {
    io_.on_io([&](Server& s) { s.add_spare(key); });
  }
  void dismiss_spare(std::uint32_t key, const std::string& why) {
    io_.on_io([&](Server& s) { s.dismiss_spare(key, why); });
  }
  std::size_t parked_spares() {
    return io_.on_io([](Server& s) { return s.parked_spares(); });
  }
  std::size_t pending_gets() {
    return io_.on_io([](Server& s) { return s.pending_gets(); });
  }

 private:
  hvdrun::test::IoThread<Server> io_;
  std::uint16_t port_ = 0;
};

Join make_join(std::uint32_t slot);

// Workers 0..n-1 joined to generation 0, each on its own connection.
std::vector<std::unique_ptr<Client>> join_workers(const ServerThread& server, int n);

// Blocking socket for hand-made frames (SO_RCVTIMEO bounds every read).
class RawConn {
 public:
  explicit RawConn(std::uint16_t port);
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  void send_bytes(const std::vector<std::uint8_t>& bytes);
  void send(const Message& m) { send_bytes(encode(m)); }
  // Next message, or nullopt when the server closed the connection.
  std::optional<Message> receive();
  // Reads the challenge and answers it (the server answers only a wrong secret, with
  // ErrorMsg kAuthFailed); returns the challenge.
  Message authenticate(std::string_view secret);
  // True if the server closed the connection (EOF) before the receive timeout.
  bool closed_by_server();
  // True if something arrives (or the connection ends) within `limit`; reads nothing.
  bool readable_within(std::chrono::milliseconds limit);

 private:
  UniqueFd fd_;
};

}  // namespace hvdrun::rdzv::test
