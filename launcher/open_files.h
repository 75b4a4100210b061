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

}  // namespace hvdrun::launcher
