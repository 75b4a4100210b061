// The launcher's open-file budget: the soft RLIMIT_NOFILE, and the files the launcher spends
// on itself and on each local worker (checked before spawning, and left free by the caps on
// connections that hold no credentials).
#pragma once

#include <cstddef>

namespace hvdrun::launcher {

// A local worker: its stdout and stderr pipes and its exec-error pipe while the batch
// starts, then its rendezvous connection.
inline constexpr std::size_t kFilesPerLocalWorker = 4;
// The launcher's own sockets, timers and the watchdog.
inline constexpr std::size_t kLauncherFiles = 64;

// The soft RLIMIT_NOFILE; SIZE_MAX when unlimited or unknown.
std::size_t open_file_limit();

// A job's workers, as the launcher spends files on them: a local one kFilesPerLocalWorker, and
// one more to spare; a remote one its rendezvous connection.
struct WorkerCount {
  std::size_t local = 0;
  std::size_t remote = 0;
  std::size_t total() const noexcept { return local + remote; }
};

// The connections each of the launcher's two ports that take clients without credentials
// (hvdrun's rendezvous until a client authenticates, Horovod's HTTP rendezvous) may hold: a
// quarter of what the soft limit `limit` leaves after the launcher's files and its workers',
// so that together they leave half of it for starting workers again, SSH sessions and output
// files; never fewer than 16.
std::size_t credential_free_connections(std::size_t limit, WorkerCount workers);

}  // namespace hvdrun::launcher
