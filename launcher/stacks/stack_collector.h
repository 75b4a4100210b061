// StackCollector: the stacks of a job's local workers, collected in the background while the
// job goes on: Python frames of every thread from the Python hook (python_hook.h), native
// frames of every thread from eu-stack, in parallel (8 at a time, each bounded). Each rank's
// stacks are appended to <out_dir>/rank.<R>.txt; the results reach `done` on the io thread.
// One collection at a time. Where eu-stack is missing or may not trace (ptrace scope), the
// result carries a one-line note instead of native frames.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace hvdrun::launcher {

struct StackTarget {
  int rank = 0;
  std::string host;
  pid_t pid = 0;
};

struct RankStacks {
  StackTarget target;
  std::string python;  // faulthandler's dump; empty for a program without the hook
  std::string native;  // eu-stack's output; empty with a note
  std::string note;    // why native frames are missing
  std::filesystem::path file;
};

class StackCollector {
 public:
  using Done = std::function<void(std::vector<RankStacks>)>;

  // `hook_dir`: where the Python hook writes (python_hook.h); `out_dir`: the rank files (made
  // on first use).
  StackCollector(boost::asio::io_context& io, std::filesystem::path hook_dir,
                 std::filesystem::path out_dir);
  ~StackCollector();  // waits for a collection under way (each tool is bounded)
  StackCollector(const StackCollector&) = delete;
  StackCollector& operator=(const StackCollector&) = delete;

  const std::filesystem::path& out_dir() const noexcept { return out_dir_; }
  // Starts collecting; false (and nothing done) while an earlier collection runs.
  bool collect(std::vector<StackTarget> targets, Done done);

 private:
  struct State;
  boost::asio::io_context& io_;
  std::filesystem::path hook_dir_;
  std::filesystem::path out_dir_;
  std::shared_ptr<State> state_;
  std::thread worker_;
};

// One rank's stacks, as collect() gathers them (its node agent too): Python first, then native.
RankStacks collect_one(const StackTarget& target, const std::filesystem::path& hook_dir);

// Appends them to <out_dir>/rank.<R>.txt under a header with the time, and sets r.file.
void append_stacks_file(RankStacks& r, const std::filesystem::path& out_dir);

}  // namespace hvdrun::launcher
