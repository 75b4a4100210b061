// Test harness: N TCP rings over 127.0.0.1 in one process, one thread per rank, and an
// in-process FailureBoard the rings of one test can share.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hvdrun/error.h"
#include "worker-runtime/tcp/ring.h"

namespace hvdrun::test {

inline constexpr std::string_view kSecret = "ring-test-secret";

struct Listeners {
  std::vector<tcp::Listener> listeners;
  std::vector<rdzv::PeerAddr> peers;
};

inline Listeners bind_listeners(int n) {
  Listeners out;
  for (int i = 0; i < n; ++i) {
    out.listeners.push_back(tcp::Listener::bind("127.0.0.1", 0));
    out.peers.push_back({"127.0.0.1", out.listeners.back().port()});
  }
  return out;
}

// What rank r of the rings over `l` is given: its own listener and its neighbours'.
inline tcp::RingAddresses addresses_of(const Listeners& l, int r) {
  const int n = static_cast<int>(l.peers.size());
  return {l.peers[r], l.peers[(r + n - 1) % n], l.peers[(r + 1) % n]};
}

// The failure reports of rings in one process (what the rendezvous store holds in a job).
class LocalFailureBoard final : public tcp::FailureBoard {
 public:
  void post(int rank, const std::string& report) override {
    {
      std::lock_guard lock(mutex_);
      reports_[rank] = report;
    }
    posted_.notify_all();
  }
  std::string read(int rank, std::chrono::milliseconds wait) override {
    std::unique_lock lock(mutex_);
    posted_.wait_for(lock, wait, [&] { return reports_.count(rank) > 0; });
    const auto it = reports_.find(rank);
    return it == reports_.end() ? std::string() : it->second;
  }

 private:
  std::mutex mutex_;
  std::condition_variable posted_;
  std::map<int, std::string> reports_;
};

// Runs fn(rank) on n threads; returns each rank's exception (null when it returned).
inline std::vector<std::exception_ptr> run_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline std::string what(const std::exception_ptr& error) {
  if (!error) return "(no error)";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Connects n rings (each constructor runs on its own thread, as in n processes).
// With a board, every ring posts and reads failure reports there.
inline std::vector<std::unique_ptr<tcp::Ring>> make_rings(
    int n, std::chrono::milliseconds timeout = std::chrono::seconds(20),
    std::uint32_t generation = 0, const std::shared_ptr<tcp::FailureBoard>& board = nullptr) {
  Listeners l = bind_listeners(n);
  std::vector<std::unique_ptr<tcp::Ring>> rings(n);
  const auto errors = run_ranks(n, [&](int r) {
    rings[r] = std::make_unique<tcp::Ring>(r, n, addresses_of(l, r), std::move(l.listeners[r]),
                                           std::string(kSecret), generation, timeout);
    rings[r]->set_failure_board(board);
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return rings;
}

}  // namespace hvdrun::test
