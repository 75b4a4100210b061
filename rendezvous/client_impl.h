// Client::Impl (client.h): the rendezvous client's connection, with its reader thread and
// its requests. Private to the rendezvous library: client.cpp holds the requests (join,
// rejoin, key-value, barriers), client_connection.cpp the connection (connect and
// handshake, frames, the reader thread, heartbeats, a request's exchange).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "common/socket_io.h"
#include "common/unique_fd.h"
#include "rendezvous/client.h"
#include "rendezvous/protocol.h"

namespace hvdrun::rdzv {

class Client::Impl {
 public:
  using Clock = net::Clock;
  using milliseconds = std::chrono::milliseconds;
  // The client waits this much longer than the server's own deadline so that the server's
  // message (which names what is missing) arrives first.
  static constexpr milliseconds kServerGrace{2000};

  Impl(const Endpoint& server, std::string_view secret, milliseconds timeout,
       milliseconds heartbeat);
  ~Impl();
  Assignment join(const Join& join, milliseconds timeout);
  Assignment rejoin(const Join& join, milliseconds end_timeout, milliseconds form_timeout);
  void set(std::string_view key, std::string_view value, milliseconds timeout);
  std::string get(std::string_view key, milliseconds timeout);
  void barrier(std::string_view name, milliseconds timeout);
  std::uint32_t generation() const;
  void set_interrupt(int fd) noexcept { interrupt_fd_ = fd; }
  std::optional<GenerationEndEvent> generation_end() const;
  void on_generation_end(std::function<void(const GenerationEndEvent&)> callback);
  void set_progress_source(std::function<std::optional<ProgressReport>()> source);
  std::optional<ProgressReport> progress() const;
  std::string local_address() const;

 private:
  // The generation a Join was for ended before that generation formed.
  struct Superseded {};

  // Joins generation `gen`; if it ends before it formed, the one the end names, and so on.
  Assignment join_following(const Join& join, std::uint32_t gen, Clock::time_point deadline);
  void check_key(const std::string& got, std::string_view want) const;
  [[noreturn]] void io_failed(const net::IoResult& r, const std::string& what,
                              milliseconds timeout) const;
  void send(const Message& m, Clock::time_point deadline, const std::string& what,
            milliseconds timeout);
  // Reads one whole frame; before the reader thread exists, or on it.
  std::variant<Message, net::IoResult, DecodeError> read_frame(Clock::time_point deadline,
                                                               int interrupt_fd);
  Message receive_direct(MsgType expected, Clock::time_point deadline, const std::string& what,
                         milliseconds timeout);
  Message checked(Message message, MsgType expected) const;
  // Sends `m` and waits for its reply: a frame of generation `reply_gen` or later (default:
  // m's). On any error but an interruption after the generation ended, the connection is
  // closed: its state is unknown.
  Message request(const Message& m, MsgType expected, milliseconds timeout, milliseconds grace,
                  const std::string& what, std::optional<std::uint32_t> join_gen = {});
  Message exchange(const Message& m, MsgType expected, milliseconds timeout, milliseconds grace,
                   const std::string& what, std::optional<std::uint32_t> join_gen);
  // Waits until the reader has seen the connection end, `limit` passes or the interrupt fd
  // is raised.
  void await_reader_end(Clock::time_point limit);
  static void drain(int fd);
  // Wakes a request waiting in exchange(); called with mutex_ held.
  void wake();
  void close_connection(const std::string& why);
  // The reader thread: frames to replies_ or the push handler, heartbeats on idle.
  void read_loop();
  void dispatch(Message message);
  void lost(const std::string& why);

  static constexpr milliseconds kHeartbeatSend{5000};
  static constexpr milliseconds kLastHeartbeat{200};
  static constexpr milliseconds kFrameTime{10000};  // a started frame must arrive whole
  // How long a request whose send failed waits for the reader to take the server's last words.
  static constexpr milliseconds kReaderEnd{2000};

  std::string where_;
  milliseconds heartbeat_;
  UniqueFd fd_;
  UniqueFd stop_;
  UniqueFd wake_;  // readable when the reader added a reply, an end or a terminal error
  std::atomic<int> interrupt_fd_{-1};
  std::mutex write_mutex_;                // guards the socket's sending side and:
  std::vector<std::uint8_t> auth_frame_;  // Auth, until the first frame sent carries it
  mutable std::mutex mutex_;              // guards what follows
  std::condition_variable cv_;
  std::uint32_t generation_ = 0;
  std::deque<Message> replies_;
  std::optional<GenerationEndEvent> end_;
  std::function<void(const GenerationEndEvent&)> on_end_;
  std::function<std::optional<ProgressReport>()> progress_;  // for each heartbeat
  std::optional<std::string> terminal_;
  std::thread reader_;  // last: started when the rest is ready
};

}  // namespace hvdrun::rdzv
