// MASTER_PORT reservation (port_reservation.h).
#include "launcher/servers/port_reservation.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "hvdrun/error.h"

namespace hvdrun::launcher {

PortReservation PortReservation::reserve() {
  const auto fail = [](const char* call) {
    throw NetworkError(std::string("cannot reserve a port for MASTER_PORT: ") + call + ": " +
                       std::strerror(errno));
  };
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) fail("socket");
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) fail("setsockopt");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  socklen_t length = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    fail("getsockname");
  }
  return PortReservation(std::move(fd), ntohs(addr.sin_port));
}

}  // namespace hvdrun::launcher
