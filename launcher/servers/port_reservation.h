// A TCP port held for a worker for the job's lifetime: MASTER_PORT, where rank 0's
// torch.distributed TCPStore listens. The socket is bound with SO_REUSEADDR to 0.0.0.0 and
// never listens, so the kernel hands the port to no other bind(0) or outgoing connection on
// this machine (two jobs started at the same moment get different ports) while the TCPStore,
// which binds with SO_REUSEADDR too, can still take it.
#pragma once

#include <cstdint>

#include "common/unique_fd.h"

namespace hvdrun::launcher {

class PortReservation {
 public:
  // Throws NetworkError naming the syscall if no port can be bound.
  static PortReservation reserve();
  std::uint16_t port() const noexcept { return port_; }

 private:
  PortReservation(UniqueFd fd, std::uint16_t port) : fd_(std::move(fd)), port_(port) {}
  UniqueFd fd_;
  std::uint16_t port_ = 0;
};

}  // namespace hvdrun::launcher
