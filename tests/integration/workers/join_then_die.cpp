// Worker for the elastic tests: joins the job's rendezvous with a listening data socket,
// takes its assignment and kills itself before its ring neighbours can connect to it, so
// that the others' first generation breaks while it forms.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/unique_fd.h"
#include "rendezvous/client.h"
#include "rendezvous/env_names.h"

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

int main() {
  using namespace hvdrun;
  const UniqueFd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  if (!listener || ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), length) != 0 ||
      ::listen(listener.get(), 4) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    std::perror("join_then_die: data socket");
    return 2;
  }
  rdzv::Client client(rdzv::Endpoint::parse(env_or_empty(env::kRendezvousAddr)),
                      env_or_empty(env::kSecret), std::chrono::seconds(20));
  rdzv::Join join;
  join.slot = static_cast<std::uint32_t>(std::stoul(env_or_empty(env::kSlot)));
  join.pid = static_cast<std::uint32_t>(::getpid());
  join.host = env_or_empty(env::kHostname);
  join.data_addr = "127.0.0.1";
  join.data_port = ntohs(addr.sin_port);
  const rdzv::Assignment a = client.join(join, std::chrono::seconds(20));
  std::printf("slot %u assigned rank %d/%d; dying before the ring connects\n", join.slot,
              a.assign.rank, a.assign.size);
  std::fflush(stdout);
  ::raise(SIGKILL);
  return 1;
}
