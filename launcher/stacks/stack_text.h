// The few lines of a stack dump worth printing on the console: the top frames of the main
// thread in eu-stack's output ("TID <pid>:" block), the top lines of faulthandler's.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hvdrun::launcher {

// The first `frames` frames of thread `pid` (the main thread) in eu-stack output; empty if
// that thread is not in it.
std::vector<std::string> main_thread_frames(const std::string& eu_stack, pid_t pid,
                                            std::size_t frames);

// faulthandler's dump, thread by thread, the top `frames` "File ..." lines of each (its
// "Thread 0x... (most recent call first):" headers kept), at most `threads` threads.
std::vector<std::string> python_top_frames(const std::string& dump, std::size_t frames,
                                           std::size_t threads);

}  // namespace hvdrun::launcher
