// The simulated workers of the rendezvous scale benchmark (rendezvous_scale_bench.cpp), in one
// client process: each connects from a loopback address of its own, answers the challenge with
// its Join in the same write, and checks the ASSIGN it reads; at most kLanes connect at a time.
#pragma once

#include <netinet/in.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace hvdrun::bench::scale {

// One simulated worker: its connection and what it has read of the server's current frame.
struct Worker {
  enum class Step { kChallenge, kAssignment, kDone };
  hvdrun::UniqueFd fd;
  int rank = 0;
  Step step = Step::kChallenge;
  std::vector<std::uint8_t> in = std::vector<std::uint8_t>(256);
  std::size_t have = 0;
};

// One client process: workers [first, end), on one edge-triggered epoll set. (Not an Asio
// loop: its reactor spends a system call per wait that finds nothing, which here would cost
// the server's core a share of its time.)
struct Clients {
  hvdrun::UniqueFd epoll;
  sockaddr_in server{};
  std::string secret;
  int n = 0, first = 0, end = 0;
  std::uint32_t pid = static_cast<std::uint32_t>(::getpid());
  std::vector<std::unique_ptr<Worker>> workers;  // kept open until the process ends
  int assigned = 0;
  std::int64_t last_ns = 0;
};

// Waits for the start (EOF on `go_fd`), runs the workers and reports on `report_fd`
// "done ASSIGNED LAST_NS CPU_NS [error]" (CPU_NS: the CPU time its workers took).
int run_clients(Clients& c, int go_fd, int report_fd);

}  // namespace hvdrun::bench::scale
