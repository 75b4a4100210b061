// Elastic training with libhvdrun: the job's workers may fail or be added while it runs
// (hvdrun --min-np / --max-np / --host-discovery-script), and the survivors carry on without
// restarting, from their last commit.
//
//   hvdrun::elastic::State state;
//   state.add("weights", weights);            // std::vector<float>
//   state.add("epoch", epoch);                // any trivially copyable value
//   state.on_reset([&] { lr = base_lr * hvdrun::size(); });
//   hvdrun::elastic::run(state, [&] {
//     for (; epoch < epochs; ++epoch) {
//       for (; batch < batches; ++batch) { train_step(); if (batch % 10 == 0) state.commit(); }
//       batch = 0;
//     }
//   });
//
// run() calls sync() (rank 0's state to every rank, newcomers included), then the function.
// When a worker of the generation fails, the launcher ends the generation: every pending
// collective fails within milliseconds, run() restores the last commit, re-forms with new
// ranks (rank 0 is the longest-lived survivor), calls the reset callbacks and runs the
// function again. When workers are added, commit() throws HostsUpdated on every rank at the
// same commit, and run() re-forms without restoring. When the hosts update removes this
// worker's slot, the re-formation throws NotMemberError out of run(): the worker's part is
// over, and the program should end with status 0 (the launcher expects it to end). Outside an
// elastic job, run() calls the function once and errors propagate.
//
// Thread rules: as hvdrun.h. The registered objects must outlive the State.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "hvdrun/error.h"
#include "hvdrun/export.h"

namespace hvdrun::elastic {

// Thrown by State::commit() on every rank together when the job's workers changed.
class HVDRUN_API HostsUpdated : public ErrorKind<HostsUpdated> {
 public:
  using ErrorKind::ErrorKind;
};

class HVDRUN_API State {
 public:
  // save() returns a snapshot of the object; restore(snapshot) sets the object to one.
  using Save = std::function<std::string()>;
  using Restore = std::function<void(const std::string&)>;

  State();
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Registers an object under a unique name (UsageError for a repeated one). Its current
  // value is its first commit.
  void add(std::string name, Save save, Restore restore);

  template <class T>
  requires std::is_trivially_copyable_v<T>
  void add(std::string name, T& value) {
    Restore restore = [&value, label = name](const std::string& bytes) {
      check_size(label, bytes.size(), sizeof(T), 1);
      std::memcpy(&value, bytes.data(), sizeof(T));
    };
    add(
        std::move(name),
        [&value] { return std::string(reinterpret_cast<const char*>(&value), sizeof(T)); },
        std::move(restore));
  }

  template <class T>
  requires std::is_trivially_copyable_v<T>
  void add(std::string name, std::vector<T>& values) {
    Restore restore = [&values, label = name](const std::string& bytes) {
      check_size(label, bytes.size(), sizeof(T), 0);
      values.resize(bytes.size() / sizeof(T));
      if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
    };
    add(
        std::move(name),
        [&values] {
          return std::string(reinterpret_cast<const char*>(values.data()),
                             values.size() * sizeof(T));
        },
        std::move(restore));
  }

  // Called after each re-formation, before the function runs again (e.g. to rescale the
  // learning rate to the new size).
  void on_reset(std::function<void()> callback);

  // save(), then: if the launcher changed the job's workers, throw HostsUpdated (on every rank
  // at this same commit: the ranks agree with one small allreduce).
  void commit();
  // Snapshots every object (the state restore() goes back to).
  void save();
  // Sets every object to its last snapshot.
  void restore();
  // Rank 0's current objects to every rank (a broadcast), which also commits them.
  void sync();
  // Re-formations this process went through (0 before the first).
  int resets() const noexcept;

  // For run(): counts a re-formation and calls the reset callbacks, in the order added.
  void reset();

  // Throws ProtocolError unless `got` bytes are a whole number of `element`-byte values (and
  // exactly `count` of them when count > 0).
  static void check_size(const std::string& name, std::size_t got, std::size_t element,
                         std::size_t count);

 private:
  struct HVDRUN_LOCAL Impl;
  std::unique_ptr<Impl> impl_;
};

// The elastic loop (see the top of this file). Returns when `fn` returns; throws what `fn`
// throws that is not a failure of the generation (a UsageError, the program's own errors),
// and any error when the job is not elastic or re-forming fails.
HVDRUN_API void run(State& state, const std::function<void()>& fn);

}  // namespace hvdrun::elastic
