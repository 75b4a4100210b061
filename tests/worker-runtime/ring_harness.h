// Test harness: N TCP rings over 127.0.0.1 in one process, one thread per rank.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hvdrun/error.h"
#include "tcp/ring.h"

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
inline std::vector<std::unique_ptr<tcp::Ring>> make_rings(
    int n, std::chrono::milliseconds timeout = std::chrono::seconds(20),
    std::uint32_t generation = 0) {
  Listeners l = bind_listeners(n);
  std::vector<std::unique_ptr<tcp::Ring>> rings(n);
  const auto errors = run_ranks(n, [&](int r) {
    rings[r] = std::make_unique<tcp::Ring>(r, n, l.peers, std::move(l.listeners[r]),
                                           std::string(kSecret), generation, timeout);
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return rings;
}

}  // namespace hvdrun::test
