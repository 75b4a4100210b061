// listen_tcp (tcp_listen.h).
#include "common/tcp_listen.h"

#include "hvdrun/error.h"

namespace hvdrun {

namespace asio = boost::asio;

asio::ip::tcp::acceptor listen_tcp(asio::io_context& io, const std::string& address,
                                   std::uint16_t port, std::string_view who) {
  const std::string where = address + ":" + std::to_string(port);
  const std::string prefix = std::string(who) + " cannot listen on " + where + ": ";
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (ec) throw NetworkError(prefix + "bad address");
  const asio::ip::tcp::endpoint endpoint(ip, port);
  asio::ip::tcp::acceptor acceptor(io);
  const auto check = [&prefix](const boost::system::error_code& error, const char* call) {
    if (error) throw NetworkError(prefix + call + ": " + error.message());
  };
  acceptor.open(endpoint.protocol(), ec);
  check(ec, "socket");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  check(ec, "setsockopt");
  acceptor.bind(endpoint, ec);
  check(ec, "bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  check(ec, "listen");
  return acceptor;
}

}  // namespace hvdrun
