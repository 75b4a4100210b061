// LinkLoop (link_loop.h).
#include "launcher/remote/link_loop.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <variant>

#include "hvdrun/error.h"
#include "launcher/remote/agent_channel.h"
#include "launcher/remote/host_link.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;
namespace {

constexpr int kPausedPollMs = 50;  // how often a paused link looks whether output may flow

}  // namespace

// A connected link: its stream, its channel, what it polls for and when it is next due.
struct LinkLoop::Served {
  Served(HostLink& l, std::unique_ptr<AgentTransport> t, const RemoteSpawnOptions& options,
         const RemoteEvents& events)
      : link(&l),
        transport(std::move(t)),
        stopping([link = &l] { return link->stopping(); }),
        channel(transport ? std::make_unique<AgentChannel>(*transport, options, events,
                                                           l.deadline(), stopping)
                          : nullptr) {}
  HostLink* link;
  std::unique_ptr<AgentTransport> transport;
  std::function<bool()> stopping;  // the channel keeps a reference
  std::unique_ptr<AgentChannel> channel;
  pollfd entry{-1, 0, 0};
  Clock::time_point due{};  // stepped at once when adopted
  bool ready = true;
  std::optional<Failed> failed;  // set when its host was lost
};

LinkLoop::LinkLoop(const RemoteSpawnOptions& options, const RemoteEvents& events)
    : options_(options), events_(events), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!wake_.valid()) {
    throw Error(std::string("cannot create the link loop's eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
}

LinkLoop::~LinkLoop() {
  release_all();
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake();
  thread_.join();
}

void LinkLoop::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof one);
}

void LinkLoop::adopt(HostLink& link, std::unique_ptr<AgentTransport> transport) {
  auto served = std::make_unique<Served>(link, std::move(transport), options_, events_);
  {
    std::lock_guard lock(mutex_);
    adopted_.push_back(std::move(served));
    ++held_;
  }
  wake();
}

void LinkLoop::adopt_failed(HostLink& link, std::string message) {
  auto served = std::make_unique<Served>(link, nullptr, options_, events_);
  served->failed = Failed{&link, std::move(message)};
  {
    std::lock_guard lock(mutex_);
    adopted_.push_back(std::move(served));
    ++held_;
  }
  wake();
}

void LinkLoop::release_all() {
  std::unique_lock lock(mutex_);
  released_.wait(lock, [this] { return held_ == 0; });
}

bool LinkLoop::step(Served& s, Clock::time_point now) {
  bool stop = false;
  auto commands = s.link->take_commands(stop);
  bool ending = false;
  for (auto& command : commands) {
    if (auto* start = std::get_if<HostLink::Start>(&command)) {
      if (!stop) s.channel->add(std::move(start->workers));
    } else if (const auto* sig = std::get_if<HostLink::Signal>(&command)) {
      s.channel->signal(sig->id, sig->signo);
    } else if (const auto* end = std::get_if<HostLink::JobEnd>(&command)) {
      s.channel->end_job(end->status, end->again);
      ending = true;
    } else {
      s.channel->request_stacks();
    }
  }
  if (stop) {
    if (ending) s.channel->advance(false);  // the job's status goes out before the link closes
    return false;
  }
  const bool paused = options_.output_paused && options_.output_paused();
  if (!s.channel->advance(paused)) {
    s.failed = Failed{s.link, s.channel->failure()};
    return false;
  }
  int timeout = s.channel->poll_timeout_ms(static_cast<int>(options_.ssh.keepalive.count()));
  s.entry = s.transport->poll_entry(timeout);
  if (paused) timeout = std::min(timeout, kPausedPollMs);
  s.due = now + std::chrono::milliseconds(std::max(0, timeout));
  s.ready = false;
  return true;
}

// After the host failed: every worker queued on it now fails to start (until the stop).
void LinkLoop::fail_queued(Failed& failed) {
  bool stop = false;
  for (auto& command : failed.link->take_commands(stop)) {
    if (auto* start = std::get_if<HostLink::Start>(&command)) {
      for (const auto& worker : start->workers) {
        if (!stop && !failed.link->stopping()) {
          events_.on_exit(worker.id, ProcessEnd::failed_to_start(failed.message), false);
        }
      }
    }
  }
}

void LinkLoop::run() {
  std::vector<std::unique_ptr<Served>> served;
  std::vector<Failed> failed;
  std::vector<pollfd> fds;
  for (;;) {
    std::uint64_t count;
    while (::read(wake_.get(), &count, sizeof count) > 0) {
    }
    std::size_t let_go = 0;
    {
      std::lock_guard lock(mutex_);
      if (quit_ && held_ == 0) return;
      for (auto& s : adopted_) {
        if (s->failed) {
          failed.push_back(std::move(*s->failed));
        } else {
          served.push_back(std::move(s));
        }
      }
      adopted_.clear();
    }
    // Failed links: their queued workers fail; a stopped one is let go of.
    std::erase_if(failed, [&](Failed& f) {
      fail_queued(f);
      if (!f.link->stopping()) return false;
      ++let_go;
      return true;
    });
    const auto now = Clock::now();
    auto next = now + std::chrono::hours(1);
    std::erase_if(served, [&](std::unique_ptr<Served>& s) {
      if (s->ready || s->link->has_commands() || now >= s->due) {
        if (!step(*s, now)) {
          if (s->failed) {
            if (events_.on_host_lost && !s->link->stopping()) {
              events_.on_host_lost(s->link->index(), s->failed->message);
            }
            failed.push_back(std::move(*s->failed));
            fail_queued(failed.back());
          } else {
            ++let_go;
          }
          return true;  // its channel and stream close here
        }
      }
      next = std::min(next, s->due);
      return false;
    });
    if (let_go > 0) {
      std::lock_guard lock(mutex_);
      held_ -= let_go;
      if (held_ == 0) released_.notify_all();
    }
    fds.assign(1, pollfd{wake_.get(), POLLIN, 0});
    for (const auto& s : served) fds.push_back(s->entry);
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long>(wait, 0, 3'600'000)));
    for (std::size_t i = 0; i < served.size(); ++i) {
      if (fds[i + 1].revents != 0) served[i]->ready = true;
    }
  }
}

}  // namespace hvdrun::launcher::remote
