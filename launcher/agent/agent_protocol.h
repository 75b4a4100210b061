// The node agent protocol: one byte stream per host between the launcher and that host's
// node agent (`hvdrun --node-agent`), in both directions a sequence of frames. Today the
// stream is an SSH channel's stdin (launcher -> agent) and stdout (agent -> launcher); the
// agent's stderr carries only its own diagnostics.
//
//   agent -> launcher, first: the preamble line kAgentPreamble, then a Hello frame. Bytes
//   before the preamble (a login shell's banner) are not frames; the launcher skips them.
//   frame: u32 body length (little-endian, 1..kMaxFrameBytes), then the body: u8 type, fields.
//   fields: u32/i32 little-endian; strings a u32 length and bytes; lists a u32 count first.
//
// Launcher -> agent: Spawn (a worker: id, cwd, environment, argv), Signal (one worker's process
// group, or every worker's), StacksRequest (every worker's stacks, answered by one Stacks frame
// per worker), JobEnd (the job's status), Refused (this agent is not taken, and why), Credit
// (output bytes the launcher takes: the agent sends Output only within the credit it holds,
// kInitialCredit at first, so output waits on the host, not in the launcher, when the launcher's
// console is slow: back-pressure). EOF: the agent takes every worker down (SIGTERM, kKillGrace,
// SIGKILL) and exits. Agent -> launcher: Hello (version, host name, pid, node name), Started (a
// worker's pid), Output, Exit (a worker's end; output_open: its output still follows, then
// OutputClosed), Heartbeat (every kHeartbeatInterval, so a silent agent is a lost host). Every
// decode is bounded and checked: a bad frame is a ProtocolError naming what was wrong.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/process_end.h"
#include "launcher/agent/remote_exit.h"

namespace hvdrun::launcher::agent {

inline constexpr std::string_view kAgentPreamble = "HVDRUN-NODE-AGENT/1\n";
inline constexpr std::uint32_t kAgentProtocolVersion = 3;   // 2: JobEnd's `again`; 3: Refused
inline constexpr std::size_t kMaxFrameBytes = 64u << 20;    // a Spawn with a large environment
inline constexpr std::size_t kMaxStrings = 1u << 20;        // env entries + argv words of a Spawn
inline constexpr std::size_t kMaxOutputChunk = 64u << 10;   // bytes of one Output frame
inline constexpr std::size_t kInitialCredit = 512u << 10;   // output the agent may send unasked
inline constexpr std::size_t kMaxPreambleSkip = 64u << 10;  // banner bytes skipped at most
inline constexpr std::chrono::milliseconds kHeartbeatInterval{2000};
inline constexpr std::chrono::milliseconds kKillGrace{1000};

// What a worker runs: the agent changes to `cwd`, lays `env` over its own environment and
// searches argv[0] in the resulting PATH.
struct WorkerSpec {
  std::string cwd;
  std::vector<std::string> env;   // "NAME=VALUE"
  std::vector<std::string> argv;  // not empty
  bool operator==(const WorkerSpec&) const = default;
};

struct SpawnFrame {
  std::uint32_t id = 0;  // the launcher's number for the worker, unique per agent
  WorkerSpec spec;
  bool operator==(const SpawnFrame&) const = default;
};
struct SignalFrame {
  static constexpr std::int32_t kEveryWorker = -1;
  std::int32_t id = kEveryWorker;
  std::int32_t signo = 0;  // one of agent_signal_allowed()
  bool operator==(const SignalFrame&) const = default;
};
struct CreditFrame {
  std::uint32_t bytes = 0;
  bool operator==(const CreditFrame&) const = default;
};
struct HelloFrame {
  std::uint32_t version = kAgentProtocolVersion;
  std::string host;  // its host name, for messages
  std::int32_t pid = 0;
  std::string node;  // the name the launcher knows its host by (a Slurm node name), or empty
  bool operator==(const HelloFrame&) const = default;
};
struct StartedFrame {
  std::uint32_t id = 0;
  std::int32_t pid = 0;
  bool operator==(const StartedFrame&) const = default;
};
struct OutputFrame {
  std::uint32_t id = 0;
  StreamKind stream = StreamKind::kStdout;
  std::string bytes;  // 1..kMaxOutputChunk
  bool operator==(const OutputFrame&) const = default;
};
struct ExitFrame {
  std::uint32_t id = 0;
  ProcessEnd end;  // kExited or kSignaled (value), or kFailedToStart (message)
  bool output_open = false;
  bool operator==(const ExitFrame&) const = default;
};
struct OutputClosedFrame {
  std::uint32_t id = 0;
  bool operator==(const OutputClosedFrame&) const = default;
};
struct HeartbeatFrame {
  bool operator==(const HeartbeatFrame&) const = default;
};
// Launcher -> agent: collect the stacks of every running worker (hang forensics); the agent
// answers with one StacksFrame per worker, in the background while its workers go on.
struct StacksRequestFrame {
  bool operator==(const StacksRequestFrame&) const = default;
};
inline constexpr std::size_t kMaxStackText = 1u << 20;  // of each kind, per worker
struct StacksFrame {
  std::uint32_t id = 0;
  std::int32_t pid = 0;
  std::string python;  // faulthandler's dump (empty: not a hooked Python program)
  std::string native;  // eu-stack's output (empty: see note)
  std::string note;    // why native frames are missing
  bool operator==(const StacksFrame&) const = default;
};

// Launcher -> agent, at the job's end: the job's exit status, which the agent then exits with
// (a node started on its own, as a Kubernetes pod, reports the job's outcome, not its own); or,
// with `again`, that the launcher runs again on the same port (the job after --preflight's
// probes): the agent connects again once this run is over.
struct JobEndFrame {
  std::int32_t status = 0;  // 0..255
  bool again = false;
  bool operator==(const JobEndFrame&) const = default;
};

// Launcher -> agent, instead of anything else: this agent is not taken (its node is not one of
// the job's, or already has its agent); the agent says why and exits non-zero.
struct RefusedFrame {
  std::string reason;  // names the node
  bool operator==(const RefusedFrame&) const = default;
};

using ToAgent = std::variant<SpawnFrame, SignalFrame, CreditFrame, StacksRequestFrame, JobEndFrame,
                             RefusedFrame>;
using FromAgent = std::variant<HelloFrame, StartedFrame, OutputFrame, ExitFrame, OutputClosedFrame,
                               HeartbeatFrame, StacksFrame>;

// Whether the agent delivers `signo` to workers: TERM, KILL, INT, HUP, QUIT, USR1, USR2, CONT.
bool agent_signal_allowed(int signo) noexcept;

// One whole frame (length and body). Throws ProtocolError if a bound is exceeded or a string
// holds a NUL byte.
std::string encode(const ToAgent& frame);
std::string encode(const FromAgent& frame);

// Cuts frames out of a byte stream as it arrives. Throws ProtocolError on a bad frame; after
// that the stream is unusable.
template <class Frame>
class FrameReader {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete frame, or nullopt until more bytes came.
  std::optional<Frame> next();
  std::size_t buffered() const noexcept { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  std::size_t start_ = 0;
};

// The launcher's side of the agent's stdout: skips what precedes the preamble (bounded), then
// reads frames. `skipped()` holds what was skipped, for a message.
class AgentStreamReader {
 public:
  void feed(std::string_view bytes);
  std::optional<FromAgent> next();
  bool synced() const noexcept { return synced_; }
  const std::string& skipped() const noexcept { return skipped_; }

 private:
  bool synced_ = false;
  std::string skipped_;
  FrameReader<FromAgent> frames_;
};

}  // namespace hvdrun::launcher::agent
