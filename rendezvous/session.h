// One rendezvous connection on the server: a reader and a writer, kept alive by
// shared_from_this (plain handlers, no coroutine: a server holds one per worker, and a
// coroutine's frames cost about a kilobyte more). Its authentication deadline is ServerCore's
// (one timer for all sessions). Messages go to ServerCore; replies are queued with send().
// Thread: the server's io_context thread only. Lifetime: until the socket is closed and the
// reader, a posted or running write and the close grace's handler have returned; holds the
// ServerCore alive meanwhile.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/memory_budget.h"
#include "rendezvous/protocol.h"

namespace hvdrun::rdzv {

class ServerCore;
struct Wait;

class Session : public std::enable_shared_from_this<Session> {
 public:
  enum class State { kChallenged, kAuthenticated, kClosing, kClosed };

  // `remote`: the peer's address as accept returned it.
  Session(boost::asio::ip::tcp::socket socket, const boost::asio::ip::tcp::endpoint& remote,
          std::shared_ptr<ServerCore> core, std::uint64_t id);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Sends the challenge and starts the reader.
  void start();
  void send(const Message& message);
  void send_frame(std::vector<std::uint8_t> frame);
  // Sends ErrorMsg{code, text}, then closes (within 1 s even if the peer does not read).
  void fail(ErrorCode code, std::string text);
  // Closes now; pending output is dropped.
  void close();

  // Tells ServerCore, as close() does for a session that never authenticated.
  void authenticated();
  // ServerCore's authentication deadline passed: a session still challenged is failed.
  void authentication_timed_out();
  bool is_open() const noexcept {
    return state_ == State::kChallenged || state_ == State::kAuthenticated;
  }
  State state() const noexcept { return state_; }
  std::uint64_t id() const noexcept { return id_; }
  const std::string& peer() const noexcept { return peer_; }        // "ip:port"
  const std::string& peer_ip() const noexcept { return peer_ip_; }  // "ip"
  const std::array<std::uint8_t, kNonceSize>& nonce() const noexcept { return nonce_; }

  // Bookkeeping owned by ServerCore.
  std::optional<std::uint32_t> slot;    // the worker key, set once its first Join was accepted
  std::uint32_t joined_generation = 0;  // of its last accepted Join
  // A spare's Join is held (no generation has it yet): it waits for its promotion.
  bool parked = false;
  std::uint32_t pid = 0;
  std::chrono::steady_clock::time_point last_heard = std::chrono::steady_clock::now();
  bool lost_reported = false;              // its missed heartbeats were reported
  std::optional<ProgressReport> progress;  // from its last heartbeat that carried one
  std::chrono::steady_clock::time_point progress_at;
  // Its timed collectives not yet taken (bounded); the member's fields are filled when taken.
  std::deque<TimedCollective> samples;
  std::vector<std::shared_ptr<Wait>> waits;  // pending KvGet / Barrier requests

 private:
  // The reader: whole frames at the front of in_ go to ServerCore; when none is left, one
  // async_read_some for more.
  void read_more();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void handle_frames();
  // The writer: one async_write at a time, of everything queued when it starts.
  void write_outbox();
  void write_done(const boost::system::error_code& ec, std::size_t written);
  void gone();
  void over_budget(const char* what, std::size_t bytes);

  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<ServerCore> core_;
  std::uint64_t id_;
  State state_ = State::kChallenged;
  std::string peer_, peer_ip_;
  std::array<std::uint8_t, kNonceSize> nonce_{};
  // What arrived and is not handled yet: a client that sends several frames at once costs one
  // read. It grows to the frame being read and shrinks back after a large one.
  std::vector<std::uint8_t> in_;
  std::size_t in_have_ = 0;
  std::vector<std::vector<std::uint8_t>> outbox_;   // frames not yet handed to the writer
  std::vector<std::vector<std::uint8_t>> sending_;  // the frames of the write under way
  bool writing_ = false;                            // a write is posted or under way
  std::size_t outbox_bytes_ = 0;                    // queued and under way
  BudgetShare held_;  // outbox_bytes_ and in_ beyond kReadBuffer, in the server's budget
  boost::asio::steady_timer close_grace_;  // armed by fail()
  bool notified_gone_ = false;
  bool authenticated_ = false;
};

}  // namespace hvdrun::rdzv
