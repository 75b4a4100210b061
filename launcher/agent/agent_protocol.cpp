// Frames of the node agent protocol (agent_protocol.h): encoding, bounded decoding, and the
// launcher's reader that skips a login banner before the agent's preamble.
#include "launcher/agent/agent_protocol.h"

#include <signal.h>

#include <algorithm>

#include "hvdrun/error.h"
#include "launcher/agent/agent_wire.h"

namespace hvdrun::launcher::agent {
namespace {

enum Type : std::uint8_t {
  kSpawn = 1,
  kSignal = 2,
  kCredit = 3,
  kStacksRequest = 4,
  kJobEnd = 5,
  kRefused = 6,
  kHello = 16,
  kStarted = 17,
  kOutput = 18,
  kExit = 19,
  kOutputClosed = 20,
  kHeartbeat = 21,
  kStacks = 22,
};

// NUL bytes cannot travel in a string field: a dump that holds one has them replaced.
std::string stack_text(std::string text) {
  if (text.size() > kMaxStackText) text.resize(kMaxStackText);
  std::replace(text.begin(), text.end(), '\0', '?');
  return text;
}

enum EndKind : std::uint8_t { kEndExited = 0, kEndSignaled = 1, kEndFailedToStart = 2 };

constexpr std::size_t kMaxMessage = 64u << 10;  // an end's message, a host name

std::string frame_of(WireWriter& body) {
  const std::string& bytes = body.bytes();
  if (bytes.size() > kMaxFrameBytes) {
    throw ProtocolError("agent protocol: a frame of " + std::to_string(bytes.size()) +
                        " bytes exceeds the limit of " + std::to_string(kMaxFrameBytes) +
                        " (environment or arguments too large)");
  }
  WireWriter out;
  out.u32(static_cast<std::uint32_t>(bytes.size()));
  out.bytes() += bytes;
  return std::move(out.bytes());
}

void check_env_entry(const std::string& entry) {
  const auto eq = entry.find('=');
  if (eq == 0 || eq == std::string::npos) {
    throw ProtocolError("agent protocol: environment entry without NAME=: '" + entry.substr(0, 64) +
                        "'");
  }
}

struct Encoder {
  WireWriter& w;
  void operator()(const SpawnFrame& f) const {
    if (f.spec.env.size() + f.spec.argv.size() > kMaxStrings) {
      throw ProtocolError(
          "agent protocol: " + std::to_string(f.spec.env.size() + f.spec.argv.size()) +
          " strings exceed the limit of " + std::to_string(kMaxStrings));
    }
    w.u8(kSpawn);
    w.u32(f.id);
    w.string(f.spec.cwd, "working directory");
    w.list(f.spec.env, "environment");
    w.list(f.spec.argv, "argv");
  }
  void operator()(const SignalFrame& f) const {
    w.u8(kSignal);
    w.i32(f.id);
    w.i32(f.signo);
  }
  void operator()(const CreditFrame& f) const {
    w.u8(kCredit);
    w.u32(f.bytes);
  }
  void operator()(const HelloFrame& f) const {
    w.u8(kHello);
    w.u32(f.version);
    w.string(f.host.substr(0, kMaxMessage), "host name");
    w.i32(f.pid);
    w.string(f.node.substr(0, kMaxMessage), "node name");
  }
  void operator()(const StartedFrame& f) const {
    w.u8(kStarted);
    w.u32(f.id);
    w.i32(f.pid);
  }
  void operator()(const OutputFrame& f) const {
    w.u8(kOutput);
    w.u32(f.id);
    w.u8(f.stream == StreamKind::kStderr ? 2 : 1);
    w.u32(static_cast<std::uint32_t>(f.bytes.size()));
    w.bytes() += f.bytes;  // output may hold NUL bytes
  }
  void operator()(const ExitFrame& f) const {
    w.u8(kExit);
    w.u32(f.id);
    switch (f.end.kind) {
      case ProcessEnd::Kind::kExited:
        w.u8(kEndExited);
        break;
      case ProcessEnd::Kind::kSignaled:
        w.u8(kEndSignaled);
        break;
      default:
        w.u8(kEndFailedToStart);
        break;
    }
    w.i32(f.end.value);
    w.string(f.end.message.substr(0, kMaxMessage), "end message");
    w.u8(f.output_open ? 1 : 0);
  }
  void operator()(const OutputClosedFrame& f) const {
    w.u8(kOutputClosed);
    w.u32(f.id);
  }
  void operator()(const HeartbeatFrame&) const { w.u8(kHeartbeat); }
  void operator()(const StacksRequestFrame&) const { w.u8(kStacksRequest); }
  void operator()(const JobEndFrame& f) const {
    w.u8(kJobEnd);
    w.i32(f.status);
    w.u8(f.again ? 1 : 0);
  }
  void operator()(const RefusedFrame& f) const {
    w.u8(kRefused);
    w.string(f.reason.substr(0, kMaxMessage), "refusal");
  }
  void operator()(const StacksFrame& f) const {
    w.u8(kStacks);
    w.u32(f.id);
    w.i32(f.pid);
    w.string(stack_text(f.python), "python stacks");
    w.string(stack_text(f.native), "native stacks");
    w.string(stack_text(f.note.substr(0, kMaxMessage)), "stacks note");
  }
};

ToAgent decode_to_agent(std::string_view body) {
  WireReader r(body);
  switch (r.u8("frame type")) {
    case kSpawn: {
      SpawnFrame f;
      f.id = r.u32("worker id");
      f.spec.cwd = r.string("working directory", kMaxMessage);
      std::size_t budget = kMaxStrings;
      f.spec.env = r.list("environment", budget);
      f.spec.argv = r.list("argv", budget);
      r.finish("spawn");
      if (f.spec.argv.empty()) throw ProtocolError("agent protocol: spawn with an empty argv");
      for (const auto& entry : f.spec.env) check_env_entry(entry);
      return f;
    }
    case kSignal: {
      SignalFrame f;
      f.id = r.i32("worker id");
      f.signo = r.i32("signal");
      r.finish("signal");
      if (!agent_signal_allowed(f.signo)) {
        throw ProtocolError("agent protocol: signal " + std::to_string(f.signo) +
                            " is not one the agent delivers");
      }
      return f;
    }
    case kCredit: {
      CreditFrame f;
      f.bytes = r.u32("credit");
      r.finish("credit");
      return f;
    }
    case kStacksRequest:
      r.finish("stacks request");
      return StacksRequestFrame{};
    case kJobEnd: {
      JobEndFrame f;
      f.status = r.i32("status");
      const auto again = r.u8("again");
      r.finish("job end");
      if (again > 1)
        throw ProtocolError("agent protocol: job end 'again' " + std::to_string(again));
      f.again = again == 1;
      if (f.status < 0 || f.status > 255) {
        throw ProtocolError("agent protocol: job status " + std::to_string(f.status));
      }
      return f;
    }
    case kRefused: {
      RefusedFrame f;
      f.reason = r.string("refusal", kMaxMessage);
      r.finish("refused");
      return f;
    }
    default:
      throw ProtocolError("agent protocol: unknown frame type " +
                          std::to_string(static_cast<unsigned char>(body[0])) +
                          " from the launcher");
  }
}

FromAgent decode_from_agent(std::string_view body) {
  WireReader r(body);
  switch (r.u8("frame type")) {
    case kHello: {
      HelloFrame f;
      f.version = r.u32("version");
      f.host = r.string("host name", kMaxMessage);
      f.pid = r.i32("pid");
      f.node = r.string("node name", kMaxMessage);
      r.finish("hello");
      return f;
    }
    case kStarted: {
      StartedFrame f;
      f.id = r.u32("worker id");
      f.pid = r.i32("pid");
      r.finish("started");
      return f;
    }
    case kOutput: {
      OutputFrame f;
      f.id = r.u32("worker id");
      const auto stream = r.u8("stream");
      if (stream != 1 && stream != 2) {
        throw ProtocolError("agent protocol: output stream " + std::to_string(stream));
      }
      f.stream = stream == 2 ? StreamKind::kStderr : StreamKind::kStdout;
      const std::uint32_t size = r.u32("output size");
      if (size == 0 || size > kMaxOutputChunk || size != body.size() - 10) {
        throw ProtocolError("agent protocol: output frame of " + std::to_string(size) +
                            " bytes does not match its frame or exceeds " +
                            std::to_string(kMaxOutputChunk));
      }
      f.bytes.assign(body.substr(10));
      return f;
    }
    case kExit: {
      ExitFrame f;
      f.id = r.u32("worker id");
      const auto kind = r.u8("end kind");
      const std::int32_t value = r.i32("end value");
      std::string message = r.string("end message", kMaxMessage);
      const auto open = r.u8("output open");
      r.finish("exit");
      if (kind == kEndExited && value >= 0 && value <= 255) {
        f.end = ProcessEnd::exited(value, std::move(message));
      } else if (kind == kEndSignaled && value > 0 && value < 128) {
        f.end = ProcessEnd::signaled(value, std::move(message));
      } else if (kind == kEndFailedToStart && value == 0) {
        f.end = ProcessEnd::failed_to_start(std::move(message));
      } else {
        throw ProtocolError("agent protocol: bad end (kind " + std::to_string(kind) + ", value " +
                            std::to_string(value) + ")");
      }
      if (open > 1) throw ProtocolError("agent protocol: bad output-open flag");
      f.output_open = open == 1;
      return f;
    }
    case kOutputClosed: {
      OutputClosedFrame f;
      f.id = r.u32("worker id");
      r.finish("output-closed");
      return f;
    }
    case kHeartbeat:
      r.finish("heartbeat");
      return HeartbeatFrame{};
    case kStacks: {
      StacksFrame f;
      f.id = r.u32("worker id");
      f.pid = r.i32("pid");
      f.python = r.string("python stacks", kMaxStackText);
      f.native = r.string("native stacks", kMaxStackText);
      f.note = r.string("stacks note", kMaxMessage);
      r.finish("stacks");
      return f;
    }
    default:
      throw ProtocolError("agent protocol: unknown frame type " +
                          std::to_string(static_cast<unsigned char>(body[0])) + " from the agent");
  }
}

template <class Frame>
Frame decode_body(std::string_view body);
template <>
ToAgent decode_body<ToAgent>(std::string_view body) {
  return decode_to_agent(body);
}
template <>
FromAgent decode_body<FromAgent>(std::string_view body) {
  return decode_from_agent(body);
}

}  // namespace

bool agent_signal_allowed(int signo) noexcept {
  switch (signo) {
    case SIGTERM:
    case SIGKILL:
    case SIGINT:
    case SIGHUP:
    case SIGQUIT:
    case SIGUSR1:
    case SIGUSR2:
    case SIGCONT:
      return true;
    default:
      return false;
  }
}

std::string encode(const ToAgent& frame) {
  WireWriter body;
  std::visit(Encoder{body}, frame);
  return frame_of(body);
}

std::string encode(const FromAgent& frame) {
  WireWriter body;
  std::visit(Encoder{body}, frame);
  return frame_of(body);
}

template <class Frame>
std::optional<Frame> FrameReader<Frame>::next() {
  const std::string_view data = std::string_view(buffer_).substr(start_);
  if (data.size() < 4) return std::nullopt;
  WireReader header(data.substr(0, 4));
  const std::uint32_t size = header.u32("frame length");
  if (size == 0 || size > kMaxFrameBytes) {
    throw ProtocolError("agent protocol: a frame of " + std::to_string(size) + " bytes (limit " +
                        std::to_string(kMaxFrameBytes) + ")");
  }
  if (data.size() - 4 < size) return std::nullopt;
  Frame frame = decode_body<Frame>(data.substr(4, size));
  start_ += 4 + size;
  // Compact once the consumed part dominates, so the buffer stays bounded by a frame or two.
  if (start_ > (64u << 10) && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return frame;
}

template class FrameReader<ToAgent>;
template class FrameReader<FromAgent>;

void AgentStreamReader::feed(std::string_view bytes) {
  if (synced_) return frames_.feed(bytes);
  skipped_.append(bytes);
  const auto at = skipped_.find(kAgentPreamble);
  if (at == std::string::npos) {
    if (skipped_.size() > kMaxPreambleSkip + kAgentPreamble.size()) {
      throw ProtocolError("no hvdrun node agent answered: its first " +
                          std::to_string(skipped_.size()) +
                          " bytes of output are not the agent's (is --remote-hvdrun an hvdrun of "
                          "this version?)");
    }
    return;
  }
  synced_ = true;
  frames_.feed(std::string_view(skipped_).substr(at + kAgentPreamble.size()));
  skipped_.resize(at);
}

std::optional<FromAgent> AgentStreamReader::next() {
  if (!synced_) return std::nullopt;
  return frames_.next();
}

}  // namespace hvdrun::launcher::agent
