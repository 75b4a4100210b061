// LinkLoop: the one thread that serves every connected host's link (host_link.h): one poll()
// over each host's agent stream and a wake-up eventfd; a link is stepped (its queued commands
// applied, its AgentChannel advanced) only when its stream is ready, it has commands, or its
// own timer is due (a worker's start deadline, the agent's silence check, a keepalive, a
// paused console), so an idle host costs nothing per pass. A link whose host is lost, or that
// failed to connect, fails every worker queued on it afterwards. 1,000 hosts: one thread here,
// and at most kConnectThreads connecting (remote_spawn.h).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "launcher/remote/agent_transport.h"
#include "launcher/remote/remote_spawn.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;

class HostLink;

class LinkLoop {
 public:
  // `options` and `events` must outlive the loop.
  LinkLoop(const RemoteSpawnOptions& options, const RemoteEvents& events);
  ~LinkLoop();  // release_all(), then the thread ends
  LinkLoop(const LinkLoop&) = delete;
  LinkLoop& operator=(const LinkLoop&) = delete;

  // A link that connected: the loop serves it from now on (until it stops or its host is lost).
  void adopt(HostLink& link, std::unique_ptr<AgentTransport> transport);
  // A link that could not connect: workers queued on it fail to start with `message`.
  void adopt_failed(HostLink& link, std::string message);
  // Something was queued on a link, or a stop asked.
  void wake();
  // Blocks until the loop let go of every link adopted so far (each was asked to stop): their
  // connections are closed and nothing more is reported for them.
  void release_all();

 private:
  struct Served;
  struct Failed {
    HostLink* link;
    std::string message;
  };
  void run();
  // One step of a served link; false once it is done with (stopped, or its host lost).
  bool step(Served& served, Clock::time_point now);
  void fail_queued(Failed& failed);

  const RemoteSpawnOptions& options_;
  const RemoteEvents& events_;
  UniqueFd wake_;  // eventfd
  std::mutex mutex_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<Served>> adopted_;  // handed over, not yet taken by the thread
  std::size_t held_ = 0;                          // links adopted and not let go of
  bool quit_ = false;
  std::thread thread_;  // last
};

}  // namespace hvdrun::launcher::remote
