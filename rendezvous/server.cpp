// Server: the public face of the rendezvous server; the work is in ServerCore.
#include "rendezvous/server.h"

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

std::uint16_t Server::port() const noexcept {
  return impl_->port();
}

std::size_t Server::joined() const noexcept {
  return impl_->joined();
}

void Server::start_generation(std::vector<Slot> slots) {
  impl_->start_generation(std::move(slots));
}

std::uint32_t Server::generation() const noexcept {
  return impl_->generation();
}

void Server::close() {
  impl_->close();
}

}  // namespace hvdrun::rdzv
