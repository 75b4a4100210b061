// Helpers of the elastic integration tests: examples/train_elastic under hvdrun, each worker
// recording its pid by HVDRUN_SLOT, and the reading of what the workers printed at the end.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {

// hvdrun `flags` then train_elastic (8192 samples, `epochs`, 15 ms a step, a commit every 5
// steps) behind a shell that runs `shell_first`, then writes its pid to DIR/<HVDRUN_SLOT>.pid
// (exec keeps the pid).
std::vector<std::string> elastic_job(const TempDir& dir, std::vector<std::string> flags, int epochs,
                                     const std::string& shell_first = "");

// Replaces `path` with `text` in one rename: a reader never sees half of it.
void write_file(const std::filesystem::path& path, const std::string& text);

// A discovery script (run as "/bin/sh DIR/discover.sh") that runs `body`, then prints DIR/hosts.
std::string hosts_script(const TempDir& dir, const std::string& body = "");

// A shell command for a worker: DIR/hosts becomes the text of DIR/`later` in one rename (a
// discovery run never reads half of it).
std::string switch_hosts_command(const TempDir& dir, const std::string& later);

// The pid of the worker with key `slot`, once `workers` workers wrote theirs.
pid_t pid_of_slot(const TempDir& dir, int slot, std::size_t workers = 4);

// "pid P done as rank R/S after K resets: weights H" lines: pid -> (size, hash).
std::map<pid_t, std::pair<int, std::string>> finished(const std::string& out);

// Every finished worker printed the same weights hash.
void expect_one_hash(const std::map<pid_t, std::pair<int, std::string>>& done,
                     const std::string& out);

// The summary's generation lines ("    G: N ranks, started S s, ..."): (N, S) in order.
std::vector<std::pair<int, double>> generations(const std::string& err);

}  // namespace hvdrun::itest
