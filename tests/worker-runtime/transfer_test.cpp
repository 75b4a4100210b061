// The data mover's stall detection on its send link, over socket pairs: a next rank that
// stops taking data is named after `timeout` without progress, and one that takes data
// slowly but steadily is not a stall however long the whole transfer takes.
#include "worker-runtime/tcp/transfer.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "hvdrun/error.h"
#include "worker-runtime/tcp/socket.h"

namespace hvdrun::tcp {
namespace {

using std::chrono::milliseconds;

struct Pair {
  UniqueFd ours, theirs;
};

Pair socket_pair() {
  int fds[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    ADD_FAILURE() << "socketpair failed";
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Links links_to(int next_fd, int prev_fd, milliseconds timeout) {
  Links links;
  links.next_fd = next_fd;
  links.prev_fd = prev_fd;
  links.next_rank = 1;
  links.prev_rank = 2;
  links.next_addr = "10.0.0.2:7000";
  links.prev_addr = "10.0.0.3:7000";
  links.generation = 3;
  links.timeout = timeout;
  return links;
}

// A plan that only sends: all of `data` is ready at once.
Plan send_only(const std::vector<std::byte>& data) {
  Plan plan;
  plan.send.push_back({data.data(), data.size()});
  plan.send_ready = data.size();
  return plan;
}

TEST(TransferStall, ANextRankThatTakesNoDataIsNamedWithWhatItDid) {
  Pair next = socket_pair(), prev = socket_pair();
  const Links links = links_to(next.ours.get(), prev.ours.get(), milliseconds(200));
  const std::vector<std::byte> data(16 << 20, std::byte{7});  // far more than the pair holds
  const Plan plan = send_only(data);
  std::vector<std::byte> staging(64 << 10);
  const auto start = Clock::now();
  try {
    run_plan(links, plan, staging, "broadcast");
    FAIL() << "16 MiB went into a socket nobody reads";
  } catch (const TimeoutError& e) {
    EXPECT_STREQ(e.what(),
                 "broadcast: rank 1 (10.0.0.2:7000) took no data for 0.2 s (generation 3)");
    const auto* fault = dynamic_cast<const LinkFault*>(&e);
    ASSERT_NE(fault, nullptr);
    EXPECT_EQ(fault->peer, 1);
    EXPECT_EQ(fault->kind, LinkFault::Kind::kStalled);
    EXPECT_EQ(fault->how, "took no data for 0.2 s");
  }
  const auto waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 5.0);
}

TEST(TransferStall, ANextRankThatTakesDataSlowlyIsNotAStall) {
  Pair next = socket_pair(), prev = socket_pair();
  const Links links = links_to(next.ours.get(), prev.ours.get(), milliseconds(500));
  // A small send buffer: the sender waits on the reader for most of the transfer.
  const int small = 32 << 10;
  ASSERT_EQ(::setsockopt(next.ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  std::vector<std::byte> data(1 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 131 % 251);
  const Plan plan = send_only(data);
  std::vector<std::byte> staging(64 << 10);
  // The reader takes up to 64 KiB every 100 ms: the whole transfer takes several timeouts, but
  // no 500 ms pass without progress.
  std::vector<std::byte> got;
  std::thread reader([&] {
    std::vector<std::byte> buffer(64 << 10);
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (got.size() < data.size() && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(100));
      const ssize_t n = ::read(next.theirs.get(), buffer.data(), buffer.size());
      if (n > 0) got.insert(got.end(), buffer.begin(), buffer.begin() + n);
    }
  });
  const auto start = Clock::now();
  try {
    run_plan(links, plan, staging, "broadcast");
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  const auto took = std::chrono::duration<double>(Clock::now() - start).count();
  reader.join();
  EXPECT_GT(took, 1.0) << "the reader was not slow enough to prove anything";
  EXPECT_TRUE(got == data) << "received " << got.size() << " of " << data.size() << " bytes";
}

}  // namespace
}  // namespace hvdrun::tcp
