// AgentChannel (agent_channel.h): the node agent's channel, its frames and its workers' events.
#include "launcher/remote/agent_channel.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "hvdrun/error.h"
#include "launcher/remote/agent_transport.h"
#include "launcher/remote/agents_log.h"

namespace hvdrun::launcher::remote {

using Clock = std::chrono::steady_clock;
namespace {

constexpr std::size_t kMaxStderrLine = 4096;  // an agent diagnostic line, longer ones are cut

std::string ms_since(Clock::time_point start) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms",
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  return text;
}

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

}  // namespace

AgentChannel::AgentChannel(AgentTransport& transport, const RemoteSpawnOptions& options,
                           const RemoteEvents& events, Clock::time_point deadline,
                           const std::function<bool()>& stopping)
    : transport_(transport),
      options_(options),
      events_(events),
      deadline_(deadline),
      stopping_(stopping),
      last_heard_(Clock::now()) {}

AgentChannel::~AgentChannel() = default;

void AgentChannel::add(std::vector<RemoteWorker> workers) {
  for (auto& worker : workers) {
    std::string frame;
    try {
      frame = agent::encode(
          agent::SpawnFrame{static_cast<std::uint32_t>(worker.id),
                            {worker.cwd, std::move(worker.env), std::move(worker.argv)}});
    } catch (const Error& e) {
      if (alive()) {
        events_.on_exit(worker.id,
                        ProcessEnd::failed_to_start(worker.label + " on " + transport_.where() +
                                                    ": " + e.what()),
                        false);
      }
      continue;
    }
    transport_.write(frame);
    entries_[worker.id] = {worker.label, Clock::now()};
  }
}

void AgentChannel::signal(int id, int signo) {
  if (!agent::agent_signal_allowed(signo)) signo = SIGTERM;
  if (id >= 0 && !entries_.contains(id)) return;
  transport_.write(agent::encode(agent::SignalFrame{id, signo}));
}

void AgentChannel::request_stacks() {
  transport_.write(agent::encode(agent::StacksRequestFrame{}));
}

void AgentChannel::end_job(int status, bool again) {
  transport_.write(agent::encode(agent::JobEndFrame{status, again}));
}

bool AgentChannel::advance(bool paused) {
  bool progress = true;
  while (progress) {
    progress = transport_.step(
        [this](StreamKind stream, std::string_view bytes) { on_bytes(stream, bytes); });
    if (!error_.empty()) {
      return fail_all("bad data from the node agent on " + transport_.where() + ": " + error_);
    }
    if (auto end = transport_.ended()) {
      std::string message = *end;
      if (!reader_.synced() && !reader_.skipped().empty()) {
        message += "; before it, the host printed: " + reader_.skipped().substr(0, 200);
      }
      return fail_all(message);
    }
    if (!paused && unacked_ > 0) {
      transport_.write(agent::encode(agent::CreditFrame{static_cast<std::uint32_t>(unacked_)}));
      unacked_ = 0;
      progress = true;
    }
    expire_unstarted();
  }
  if (hello_ && Clock::now() - last_heard_ > options_.agent_silence) {
    return fail_all("the node agent on " + transport_.where() + " sent nothing for " +
                    seconds_text(options_.agent_silence) + " (host lost)");
  }
  return true;
}

int AgentChannel::poll_timeout_ms(int keepalive_s) const {
  long ms = std::max(1, keepalive_s) * 1000L;
  ms = std::min<long>(ms, 1000);  // the silence check
  for (const auto& [id, entry] : entries_) {
    if (!entry.started && !entry.reported_end) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(start_deadline(entry) - Clock::now());
      ms = std::min<long>(ms, std::max<long>(0, left.count()));
    }
  }
  return static_cast<int>(ms);
}

void AgentChannel::on_bytes(StreamKind stream, std::string_view bytes) {
  last_heard_ = Clock::now();
  if (stream == StreamKind::kStderr) {
    for (const char c : bytes) {
      if (c == '\n') {
        on_stderr_line(stderr_line_);
        stderr_line_.clear();
      } else if (stderr_line_.size() < kMaxStderrLine) {
        stderr_line_.push_back(c);
      }
    }
    return;
  }
  if (!error_.empty()) return;
  try {
    reader_.feed(bytes);
    while (auto frame = reader_.next()) on_frame(*frame);
  } catch (const ProtocolError& e) {
    error_ = e.what();
  }
}

void AgentChannel::on_stderr_line(std::string_view line) {
  if (alive()) agents_logger()->warn("{}: {}", transport_.where(), line);
}

void AgentChannel::on_frame(agent::FromAgent& frame) {
  if (auto* hello = std::get_if<agent::HelloFrame>(&frame)) {
    if (hello->version != agent::kAgentProtocolVersion) {
      throw ProtocolError("protocol version " + std::to_string(hello->version) + ", expected " +
                          std::to_string(agent::kAgentProtocolVersion) +
                          " (another hvdrun version on the host?)");
    }
    hello_ = true;
    agents_logger()->debug("node agent on {} ({}, pid {}) is up", transport_.where(), hello->host,
                           hello->pid);
    return;
  }
  if (std::holds_alternative<agent::HeartbeatFrame>(frame)) return;
  const auto id_of = [](const auto& f) -> int { return static_cast<int>(f.id); };
  const int id = std::visit(
      [&](const auto& f) -> int {
        if constexpr (requires { f.id; }) {
          return id_of(f);
        } else {
          return -1;
        }
      },
      frame);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;  // expired or not ours: nothing more is reported for it
  Entry& entry = it->second;
  if (auto* started = std::get_if<agent::StartedFrame>(&frame)) {
    entry.started = true;
    agents_logger()->info("{} started on {} in {} (pid {})", entry.label, transport_.where(),
                          ms_since(entry.queued), started->pid);
    if (alive()) events_.on_started(id);
  } else if (auto* output = std::get_if<agent::OutputFrame>(&frame)) {
    unacked_ += output->bytes.size();
    if (alive()) events_.on_output(id, output->stream, std::move(output->bytes));
  } else if (auto* exit = std::get_if<agent::ExitFrame>(&frame)) {
    if (entry.reported_end) throw ProtocolError("a second end of worker " + std::to_string(id));
    agents_logger()->debug("{} on {}: {}{}", entry.label, transport_.where(), exit->end.describe(),
                           exit->output_open ? ", output still coming" : "");
    if (alive()) events_.on_exit(id, exit->end, exit->output_open);
    if (exit->output_open) {
      entry.reported_end = true;
    } else {
      entries_.erase(it);
    }
  } else if (auto* stacks = std::get_if<agent::StacksFrame>(&frame)) {
    if (alive() && events_.on_stacks) events_.on_stacks(id, std::move(*stacks));
  } else if (std::holds_alternative<agent::OutputClosedFrame>(frame)) {
    if (!entry.reported_end) throw ProtocolError("output closed before the end of a worker");
    if (alive()) events_.on_output_closed(id);
    entries_.erase(it);
  }
}

// The first workers share the host's connect deadline; a worker queued later (an elastic
// job's replacement) gets the start timeout from its queueing.
Clock::time_point AgentChannel::start_deadline(const Entry& entry) const {
  return std::max(deadline_, entry.queued + options_.start_timeout);
}

void AgentChannel::expire_unstarted() {
  const auto now = Clock::now();
  const auto limit = std::chrono::duration_cast<std::chrono::seconds>(options_.start_timeout);
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& entry = it->second;
    if (entry.started || entry.reported_end || now < start_deadline(entry)) {
      ++it;
      continue;
    }
    transport_.write(agent::encode(agent::SignalFrame{it->first, SIGKILL}));
    if (alive()) {
      events_.on_exit(it->first,
                      ProcessEnd::failed_to_start(
                          entry.label + " did not start on " + transport_.where() + " within " +
                          std::to_string(limit.count()) + " s (--start-timeout)"),
                      false);
    }
    it = entries_.erase(it);
  }
}

bool AgentChannel::fail_all(const std::string& message) {
  failure_ = message;
  if (alive()) agents_logger()->error("{}", message);
  for (const auto& [id, entry] : entries_) {
    if (!alive()) break;
    if (entry.reported_end) {
      events_.on_output_closed(id);
    } else {
      events_.on_exit(id,
                      entry.started ? ProcessEnd::lost_connection(message)
                                    : ProcessEnd::failed_to_start(message),
                      false);
    }
  }
  entries_.clear();
  return false;
}

}  // namespace hvdrun::launcher::remote
