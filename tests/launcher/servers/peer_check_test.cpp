// Who is at the other end of a connection: the uid of a peer socket on this machine (sock_diag),
// "not here" for one that does not exist, and the gate Horovod's rendezvous keeps with them.
#include "launcher/servers/peer_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace hvdrun::launcher {
namespace {

using boost::asio::ip::tcp;

struct Listener {
  Listener() : fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(fd.get(), 8), 0);
    socklen_t size = sizeof address;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size);
    port = ntohs(address.sin_port);
  }
  // The accepted connection's two ends.
  std::pair<tcp::endpoint, tcp::endpoint> accept_one(UniqueFd& accepted) const {
    sockaddr_in peer{};
    socklen_t size = sizeof peer;
    accepted =
        UniqueFd(::accept4(fd.get(), reinterpret_cast<sockaddr*>(&peer), &size, SOCK_CLOEXEC));
    const auto loopback = boost::asio::ip::make_address_v4("127.0.0.1");
    return {tcp::endpoint(loopback, port), tcp::endpoint(loopback, ntohs(peer.sin_port))};
  }
  UniqueFd fd;
  std::uint16_t port = 0;
};

UniqueFd connect_to(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

TEST(PeerOwner, AConnectionFromThisProcessIsOurUid) {
  Listener listener;
  UniqueFd client = connect_to(listener.port);
  UniqueFd accepted;
  const auto [local, peer] = listener.accept_one(accepted);
  const PeerOwner owner = peer_owner(local, peer);
  ASSERT_EQ(owner.kind, PeerOwner::Kind::kLocal) << owner.error;
  EXPECT_EQ(owner.uid, ::geteuid());
  PeerGate gate({});
  EXPECT_EQ(gate.admit(local, peer), "");
}

TEST(PeerOwner, ASocketThatIsNotHereIsNotLocal) {
  Listener listener;
  const auto loopback = boost::asio::ip::make_address_v4("127.0.0.1");
  const tcp::endpoint local(loopback, listener.port);
  const tcp::endpoint peer(loopback, 1);  // no socket of this machine has this pair
  EXPECT_EQ(peer_owner(local, peer).kind, PeerOwner::Kind::kNotLocal);
  PeerGate stranger([](const std::string&) { return false; });
  EXPECT_EQ(stranger.admit(local, peer),
            "it comes from neither this machine nor one of the job's hosts");
  PeerGate host([](const std::string& address) { return address == "127.0.0.1"; });
  EXPECT_EQ(host.admit(local, peer), "");
}

// Another user's process on this machine (the child drops to uid 65534 before it connects) is
// refused, naming its uid.
TEST(PeerOwner, AnotherUsersProcessIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to start a process of another user";
  Listener listener;
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[1]);  // the parent's closing of its end is what ends the wait below
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(listener.port);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::_exit(3);
    }
    char byte = 0;
    (void)::read(ready[0], &byte, 1);  // until the parent has looked
    ::_exit(0);
  }
  ::close(ready[0]);
  UniqueFd accepted;
  const auto [local, peer] = listener.accept_one(accepted);
  const PeerOwner owner = peer_owner(local, peer);
  PeerGate gate([](const std::string&) { return true; });
  const std::string why = gate.admit(local, peer);
  ::close(ready[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(owner.kind, PeerOwner::Kind::kLocal) << owner.error;
  EXPECT_EQ(owner.uid, 65534u);
  EXPECT_EQ(why, "its process belongs to uid 65534, not to hvdrun's user (uid 0)");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace hvdrun::launcher
