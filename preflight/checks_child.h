// The probe's checks in a child process of its own: a check that crashes (a GPU driver's
// SIGSEGV, an abort in a library) ends only the child, and the probe still reports, at once,
// which signal ended its checks; the verdict then fails that host with that cause instead of
// waiting for a report that never comes.
#pragma once

#include <functional>
#include <string>

namespace hvdrun::preflight {

// Runs `checks` in a child (which dies with the probe), waits for it, and returns its exit
// status. When a crash ended it (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP),
// prints `report` + " crashed=<SIGNAME>" as the probe's report line and returns 3; another
// signal (the launcher's) gives 128 + its number. When no child can be made, runs `checks` here.
int run_checks_in_child(const std::function<int()>& checks, const std::string& report);

}  // namespace hvdrun::preflight
