// Where workers run, behind one interface: this machine (LocalWorkers) or hosts reached over
// SSH (RemoteWorkers). The job starts, signals and closes them alike (through WorkerPools); each
// reports a worker's end and the closing of its output streams, keyed by WorkerId, through the
// callbacks it was built with. io thread only.
#pragma once

#include <string>
#include <vector>

#include "common/slot.h"
#include "launcher/plan/worker_id.h"

namespace hvdrun::launcher {

// One worker to start: its identity, its slot (rank and topology, for messages and the
// agent) and its complete environment (worker_env.h).
struct WorkerLaunch {
  WorkerId id;
  Slot slot;
  std::vector<std::string> env;
};

// "rank 3", or "a spare" for a warm spare (rank -1: none until promoted).
inline std::string worker_label(const Slot& slot) {
  return slot.rank < 0 ? "a spare" : "rank " + std::to_string(slot.rank);
}

class WorkerPool {
 public:
  virtual ~WorkerPool() = default;
  // Starts the workers (each already registered with the OutputSink, each id new). May be
  // called again for more while others run.
  virtual void start(std::vector<WorkerLaunch> launches) = 0;
  // Sends `signo` to every worker that may still hold a process.
  virtual void signal_all(int signo) = 0;
  // Sends `signo` to one worker (its process group); nothing if it is not this pool's.
  virtual void signal(const WorkerId& worker, int signo) = 0;
  // The job is over: whatever is left is killed and the pool's channels closed; events that
  // come later are dropped.
  virtual void close() = 0;

  // A worker's output streams may outlive its end (output still unread when it ended); each
  // that closes is reported through the pool's on_stream_closed callback.
  // Whether a stream of `worker` is still open.
  virtual bool streams_open(const WorkerId& worker) const = 0;
  // Streams still open, over every worker.
  virtual std::size_t open_streams() const = 0;
  // Every worker ended: stop waiting for their streams (take what they hold now, if the pool
  // can) and report them closed.
  virtual void close_streams() = 0;
};

}  // namespace hvdrun::launcher
