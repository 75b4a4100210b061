// RendezvousFailureBoard (see rdzv_failure_board.h).
#include "worker-runtime/rdzv_failure_board.h"

#include <algorithm>
#include <thread>

namespace hvdrun {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollInterval{10};

std::string key_of(int rank) {
  return "ring_failure/" + std::to_string(rank);
}

}  // namespace

RendezvousFailureBoard::RendezvousFailureBoard(rdzv::Client& client, int rank,
                                               std::chrono::milliseconds timeout)
    : client_(client), timeout_(timeout) {
  client_.set(key_of(rank), "", timeout_);
}

void RendezvousFailureBoard::post(int rank, const std::string& report) {
  client_.set(key_of(rank), report, timeout_);
}

std::string RendezvousFailureBoard::read(int rank, std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  for (;;) {
    std::string report = client_.get(key_of(rank), timeout_);
    if (!report.empty()) return report;
    const auto now = Clock::now();
    if (now >= deadline) return {};
    std::this_thread::sleep_for(std::min<Clock::duration>(kPollInterval, deadline - now));
  }
}

}  // namespace hvdrun
