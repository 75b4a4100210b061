// Who sent a signal, from its sender's pid: the process's name, and whether it is Slurm's step
// daemon. slurmstepd signals every process of its step (scancel, a job's time limit, a
// preemption), so a worker in the step has the signal already when hvdrun or a node agent gets
// it from there: passing it on would deliver it twice.
#pragma once

#include <sys/types.h>

#include <string>

namespace hvdrun::launcher {

// /proc/PID/comm ("timeout", "slurmstepd"), or "" when it cannot be read.
std::string process_name(pid_t pid);

// Whether `sender` (a signal's si_pid; 0: none) is Slurm's step daemon.
bool sent_by_step_daemon(pid_t sender);

}  // namespace hvdrun::launcher
