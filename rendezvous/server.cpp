// Server: the public face of the rendezvous server; the work is in ServerCore.
#include "rendezvous/server.h"

#include <algorithm>

#include "rendezvous/server_core.h"

namespace hvdrun::rdzv {

class Server::Impl : public ServerCore {
 public:
  using ServerCore::ServerCore;
};

Server::Server(boost::asio::io_context& io, ServerOptions options, ServerCallbacks callbacks)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(callbacks))) {
  impl_->start();
}

Server::~Server() {
  impl_->close();
}

KvLimits kv_limits_for(const ServerOptions& options) {
  const std::size_t n = options.slots.size();
  KvLimits limits;
  limits.max_bytes = options.kv_max_bytes ? options.kv_max_bytes
                                          : std::max<std::size_t>(std::size_t{256} << 20, n << 16);
  limits.max_keys =
      options.kv_max_keys ? options.kv_max_keys : std::max<std::size_t>(65536, n * 64);
  limits.max_unsent_bytes =
      options.max_unsent_bytes ? options.max_unsent_bytes : std::size_t{4} * kMaxBody;
  limits.max_held_bytes = options.max_held_bytes
                              ? options.max_held_bytes
                              : std::max<std::size_t>(std::size_t{256} << 20, n << 16);
  return limits;
}

std::uint16_t Server::port() const noexcept {
  return impl_->port();
}

std::size_t Server::joined() const noexcept {
  return impl_->joined();
}

void Server::start_generation(std::vector<Slot> slots) {
  impl_->start_generation(members_of(std::move(slots)), Handover::kRestart, "");
}

std::uint32_t Server::start_generation(std::vector<Member> members, Handover how,
                                       std::string reason) {
  return impl_->start_generation(std::move(members), how, std::move(reason));
}

std::vector<Member> members_of(std::vector<Slot> slots) {
  std::vector<Member> members;
  members.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    members.push_back(Member{static_cast<std::uint32_t>(i), std::move(slots[i])});
  }
  return members;
}

std::uint32_t Server::generation() const noexcept {
  return impl_->generation();
}

std::vector<MemberProgress> Server::progress() const {
  return impl_->progress();
}

std::vector<TimedCollective> Server::take_samples() {
  return impl_->take_samples();
}

void Server::add_spare(std::uint32_t key) {
  impl_->add_spare(key);
}

void Server::dismiss_spare(std::uint32_t key, const std::string& why) {
  impl_->dismiss_spare(key, why);
}

std::size_t Server::parked_spares() const noexcept {
  return impl_->parked_spares();
}

std::size_t Server::pending_gets() const noexcept {
  return impl_->pending_gets();
}

void Server::close() {
  impl_->close();
}

}  // namespace hvdrun::rdzv
