// Blocking rendezvous client (worker side): JOIN/ASSIGN, key-value store and barriers, each
// with a deadline, as requests over the connection of client_connection.cpp (client_impl.h).
// After an error the connection is closed and later calls throw NetworkError.
#include "rendezvous/client.h"

#include <algorithm>
#include <climits>

#include "hvdrun/error.h"
#include "rendezvous/client_impl.h"

namespace hvdrun::rdzv {
namespace {

using std::chrono::milliseconds;

std::uint32_t to_ms(milliseconds timeout) {
  return static_cast<std::uint32_t>(std::clamp<long long>(timeout.count(), 0, UINT32_MAX));
}

}  // namespace

Assignment Client::Impl::join(const Join& join, milliseconds timeout) {
  return join_following(join, generation(), Clock::now() + timeout);
}

Assignment Client::Impl::rejoin(const Join& join, milliseconds end_timeout,
                                milliseconds form_timeout) {
  std::uint32_t next = 0;
  {
    std::unique_lock lock(mutex_);
    const auto ended = [&] { return end_ && end_->ended >= generation_; };
    if (!cv_.wait_until(lock, Clock::now() + end_timeout, [&] { return ended() || terminal_; })) {
      throw TimeoutError(where_ + ": generation " + std::to_string(generation_) +
                         " did not end within " + std::to_string(end_timeout.count()) +
                         " ms (no re-formation to join)");
    }
    if (!ended()) throw NetworkError(*terminal_);
    next = end_->end.next;
  }
  return join_following(join, next, Clock::now() + form_timeout);
}

void Client::Impl::set(std::string_view key, std::string_view value, milliseconds timeout) {
  const auto gen = generation();
  auto reply = request(Message{gen, KvSet{std::string(key), std::string(value)}}, MsgType::kKvValue,
                       timeout, milliseconds(0), "ack of KvSet");
  check_key(std::get<KvValue>(reply.body).key, key);
}

std::string Client::Impl::get(std::string_view key, milliseconds timeout) {
  const std::string what = "value of key '" + std::string(key) + "'";
  auto reply = request(Message{generation(), KvGet{std::string(key), to_ms(timeout)}},
                       MsgType::kKvValue, timeout, kServerGrace, what);
  auto& kv = std::get<KvValue>(reply.body);
  check_key(kv.key, key);
  return std::move(kv.value);
}

void Client::Impl::barrier(std::string_view name, milliseconds timeout) {
  const std::string what = "completion of barrier '" + std::string(name) + "'";
  auto reply = request(Message{generation(), Barrier{std::string(name), to_ms(timeout)}},
                       MsgType::kBarrierDone, timeout, kServerGrace, what);
  if (std::get<BarrierDone>(reply.body).name != name) {
    throw ProtocolError(where_ + ": BarrierDone for '" + std::get<BarrierDone>(reply.body).name +
                        "', expected '" + std::string(name) + "'");
  }
}

std::uint32_t Client::Impl::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

std::optional<GenerationEndEvent> Client::Impl::generation_end() const {
  std::lock_guard lock(mutex_);
  if (end_ && end_->ended >= generation_) return end_;
  return std::nullopt;
}

void Client::Impl::on_generation_end(std::function<void(const GenerationEndEvent&)> callback) {
  std::lock_guard lock(mutex_);
  on_end_ = std::move(callback);
}

void Client::Impl::set_progress_source(std::function<std::optional<ProgressReport>()> source) {
  std::lock_guard lock(mutex_);
  progress_ = std::move(source);
}

// Joins generation `gen`; if it ends before it formed, the one the end names, and so on.
Assignment Client::Impl::join_following(const Join& join, std::uint32_t gen,
                                        Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    try {
      auto reply = request(Message{gen, join}, MsgType::kAssign, std::max(left, milliseconds(1)),
                           kServerGrace, "Assign after Join", gen);
      std::lock_guard lock(mutex_);
      generation_ = reply.generation;
      return Assignment{reply.generation, std::move(std::get<Assign>(reply.body))};
    } catch (const Superseded&) {
      std::lock_guard lock(mutex_);
      gen = end_->end.next;
    }
  }
}

void Client::Impl::check_key(const std::string& got, std::string_view want) const {
  if (got != want) {
    throw ProtocolError(where_ + ": reply for key '" + got + "', expected '" + std::string(want) +
                        "'");
  }
}

Client::Client(const Endpoint& server, std::string_view secret, milliseconds timeout,
               milliseconds heartbeat)
    : impl_(std::make_unique<Impl>(server, secret, timeout, heartbeat)) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

namespace {
template <class P>
P& live(const std::unique_ptr<P>& impl) {
  if (!impl) throw NetworkError("rendezvous client used after move");
  return *impl;
}
}  // namespace

Assignment Client::join(const Join& join, milliseconds timeout) {
  return live(impl_).join(join, timeout);
}
void Client::set(std::string_view key, std::string_view value, milliseconds timeout) {
  live(impl_).set(key, value, timeout);
}
std::string Client::get(std::string_view key, milliseconds timeout) {
  return live(impl_).get(key, timeout);
}
void Client::barrier(std::string_view name, milliseconds timeout) {
  live(impl_).barrier(name, timeout);
}
void Client::set_interrupt(int fd) noexcept {
  impl_->set_interrupt(fd);
}
Assignment Client::rejoin(const Join& join, milliseconds end_timeout, milliseconds form_timeout) {
  return live(impl_).rejoin(join, end_timeout, form_timeout);
}
std::optional<GenerationEndEvent> Client::generation_end() const {
  return impl_ ? impl_->generation_end() : std::nullopt;
}
void Client::on_generation_end(std::function<void(const GenerationEndEvent&)> callback) {
  live(impl_).on_generation_end(std::move(callback));
}
void Client::set_progress_source(std::function<std::optional<ProgressReport>()> source) {
  live(impl_).set_progress_source(std::move(source));
}

std::uint32_t Client::generation() const noexcept {
  return impl_ ? impl_->generation() : 0;
}
std::string Client::local_address() const {
  return live(impl_).local_address();
}

}  // namespace hvdrun::rdzv
