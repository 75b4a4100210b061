// PortReservation (MASTER_PORT held for the job) and Horovod's rendezvous limits per job size.
#include "launcher/servers/server_setup.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/servers/port_reservation.h"

namespace hvdrun::launcher {
namespace {

WorkerCount local(std::size_t n) {
  return WorkerCount{n, 0};
}

// Binds a TCP socket to 0.0.0.0:port (0: any); returns the errno of bind (0 on success) and
// leaves the socket in `fd` (listening if asked and bound).
int bind_port(UniqueFd& fd, std::uint16_t port, bool reuse, bool listen_too) {
  fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int on = 1;
  if (reuse) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return errno;
  if (listen_too && ::listen(fd.get(), 8) != 0) return errno;
  return 0;
}

std::uint16_t port_of(const UniqueFd& fd) {
  sockaddr_in addr{};
  socklen_t length = sizeof addr;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length);
  return ntohs(addr.sin_port);
}

// The reserved port is given to no other bind, yet rank 0's TCPStore (SO_REUSEADDR, listen)
// can take it.
TEST(PortReservation, HoldsThePortButLetsTheStoreListen) {
  const auto reservation = PortReservation::reserve();
  const auto port = reservation.port();
  ASSERT_NE(port, 0);
  UniqueFd plain;
  EXPECT_EQ(bind_port(plain, port, false, false), EADDRINUSE);
  for (int i = 0; i < 200; ++i) {
    UniqueFd any;
    ASSERT_EQ(bind_port(any, 0, false, false), 0);
    EXPECT_NE(port_of(any), port);
  }
  UniqueFd store;
  EXPECT_EQ(bind_port(store, port, true, true), 0);
  EXPECT_EQ(port_of(store), port);
}

TEST(PortReservation, TwoReservationsDiffer) {
  const auto a = PortReservation::reserve();
  const auto b = PortReservation::reserve();
  EXPECT_NE(a.port(), b.port());
}

TEST(HorovodServerOptions, LimitsGrowWithTheJob) {
  const auto small = horovod_server_options("127.0.0.1", local(4), 1 << 20);
  EXPECT_EQ(small.bind_address, "127.0.0.1");
  EXPECT_EQ(small.max_body_bytes, (64u << 10) + 4 * 256);
  EXPECT_EQ(small.max_stored_bytes, 256u << 20);
  EXPECT_EQ(small.max_connections, 4096u);
  const auto large = horovod_server_options("0.0.0.0", local(2000), 1 << 20);
  // Every rank's Gloo addresses of all its peers fit in one body, and all ranks' at once.
  EXPECT_GE(large.max_body_bytes, 2000u * 136);
  EXPECT_GE(large.max_stored_bytes, 2000u * 2000u * 136);
  EXPECT_GE(large.max_connections, 4000u);
  EXPECT_EQ(horovod_server_options("0.0.0.0", local(1'000'000), SIZE_MAX).max_body_bytes, 8u << 20);
}

// Each of the two ports that take clients without credentials gets a quarter of what the
// limit leaves after the launcher's 64 files, 5 per local worker and 1 per remote one.
TEST(HorovodServerOptions, ConnectionsStayUnderTheOpenFileLimit) {
  EXPECT_EQ(horovod_server_options("127.0.0.1", local(2), 1024).max_connections,
            (1024u - 64 - 10) / 4);
  EXPECT_EQ(horovod_server_options("127.0.0.1", local(100), 1024).max_connections,
            (1024u - 64 - 500) / 4);
  EXPECT_EQ(horovod_server_options("127.0.0.1", local(1000), 1024).max_connections, 16u);
  EXPECT_EQ(horovod_server_options("127.0.0.1", local(2), SIZE_MAX).max_connections, 4096u);
  EXPECT_EQ(horovod_server_options("127.0.0.1", local(2000), SIZE_MAX).max_connections, 8000u);
  EXPECT_EQ(horovod_server_options("0.0.0.0", WorkerCount{8, 4000}, 20000).max_connections,
            (20000u - 64 - 40 - 4000) / 4);
}

// The job's own workers may all wait at once (their files are counted), and anyone else gets
// the same quarter as on Horovod's port.
TEST(RendezvousOptions, UnauthenticatedConnectionsStayUnderTheOpenFileLimit) {
  EXPECT_EQ(rendezvous_max_unauthenticated(local(2), 1024), 2 + (1024u - 64 - 10) / 4);
  EXPECT_EQ(rendezvous_max_unauthenticated(local(100), 600), 100u + 16);
  EXPECT_EQ(rendezvous_max_unauthenticated(local(2), SIZE_MAX), 4096u);
  EXPECT_EQ(rendezvous_max_unauthenticated(WorkerCount{0, 65536}, SIZE_MAX), 65536u);
  EXPECT_EQ(rendezvous_max_unauthenticated(WorkerCount{8, 16376}, 1u << 20), 16384u);
  EXPECT_EQ(rendezvous_max_unauthenticated(WorkerCount{8, 16376}, 20000), 16384u);
  EXPECT_EQ(rendezvous_max_unauthenticated(local(3000), 18000), 3000 + (18000u - 64 - 15000) / 4);
}

TEST(CountWorkers, LocalAndRemoteSlots) {
  std::vector<Slot> slots(5);
  slots[0].host_index = slots[1].host_index = 0;
  slots[2].host_index = 1;
  slots[3].host_index = slots[4].host_index = 2;
  const WorkerCount count = count_workers(slots, {1, 2});
  EXPECT_EQ(count.local, 2u);
  EXPECT_EQ(count.remote, 3u);
  const WorkerCount elastic = count_workers(slots, {1, 2}, 12);  // --max-np 12
  EXPECT_EQ(elastic.local, 9u);
  EXPECT_EQ(elastic.remote, 3u);
}

}  // namespace
}  // namespace hvdrun::launcher
