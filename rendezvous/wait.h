// A pending KvGet or Barrier request of one session, with its deadline timer.
// Thread: the server's io_context thread. Owned jointly by the session and the store.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>

namespace hvdrun::rdzv {

class Session;

struct Wait {
  enum class Kind { kGet, kBarrier };
  Wait(boost::asio::any_io_executor executor, Kind k, std::uint32_t gen, std::string name,
       std::uint32_t timeout, std::weak_ptr<Session> owner)
      : kind(k),
        generation(gen),
        key(std::move(name)),
        timeout_ms(timeout),
        session(std::move(owner)),
        timer(std::move(executor)) {}

  Kind kind;
  std::uint32_t generation;
  std::string key;  // the KV key or the barrier name
  std::uint32_t timeout_ms;
  std::weak_ptr<Session> session;
  boost::asio::steady_timer timer;
  bool done = false;  // answered, expired or cancelled
};

}  // namespace hvdrun::rdzv
