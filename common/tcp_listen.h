// The listening socket of the launcher's servers (hvdrun's rendezvous, Horovod's): bound with
// SO_REUSEADDR and the kernel's largest backlog, on the io_context that serves it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace hvdrun {

// Throws NetworkError "<who> cannot listen on <address>:<port>: <call>: <reason>".
boost::asio::ip::tcp::acceptor listen_tcp(boost::asio::io_context& io, const std::string& address,
                                          std::uint16_t port, std::string_view who);

}  // namespace hvdrun
