// The remote agent (`hvdrun --remote-agent`), the command the launcher runs on a remote host
// over SSH, and the codec of what the launcher writes to the agent's stdin.
//
// Protocol on the agent's stdin (the SSH channel), nothing on its command line:
//   1. one spec frame: "HVDA", u16 version (1), u16 flags (0), u32 payload length, all
//      little-endian, then the payload: cwd, the environment list and argv, each string a u32
//      length and its bytes, each list a u32 count first. Bounded (kAgentSpecMaxBytes,
//      kAgentMaxStrings), no NUL bytes in any string, "NAME=VALUE" entries, argv not empty.
//   2. then 4-byte control messages: "TERM" (SIGTERM to the worker's process group), "KILL"
//      (SIGKILL), "INT " (SIGINT). EOF on stdin: SIGTERM, 1 s grace, SIGKILL to the group.
// The agent relays the worker's stdout/stderr to its own and exits with the worker's exit
// code, or dies by the worker's signal (sshd then reports exit-signal). A worker that failed
// while its output still waits for the channel (the launcher is not reading it): the agent
// exits at once, so that sshd reports the end now, and a child of its own relays the rest
// of the output. Its own failures:
// exit 2 (bad spec, missing working directory), 127 (program cannot be run), messages on
// stderr naming the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher::ssh {

struct AgentSpec {
  std::string cwd;                // the agent changes there first
  std::vector<std::string> env;   // "NAME=VALUE", laid over the agent's own environment
  std::vector<std::string> argv;  // argv[0] is searched in the resulting PATH
  bool operator==(const AgentSpec&) const = default;
};

inline constexpr std::size_t kAgentHeaderSize = 12;
inline constexpr std::uint16_t kAgentProtocolVersion = 1;
inline constexpr std::size_t kAgentSpecMaxBytes = 64u << 20;  // payload, whole frame
inline constexpr std::size_t kAgentMaxStrings = 1u << 20;     // env entries + argv words
inline constexpr std::size_t kAgentControlSize = 4;

// The whole frame (header + payload). Throws ProtocolError if a bound is exceeded or a string
// holds a NUL byte.
std::string encode_agent_spec(const AgentSpec& spec);

// The payload length announced by a 12-byte header; ProtocolError naming the bad magic,
// version or size.
std::size_t decode_agent_header(std::string_view header);

// The payload (without header); ProtocolError on truncation, excess bytes or a bad entry.
AgentSpec decode_agent_payload(std::string_view payload);

// Header + payload in one buffer, exactly one frame.
AgentSpec decode_agent_spec(std::string_view frame);

enum class AgentControl { kTerm, kKill, kInt };

// "TERM", "KILL" or "INT ".
std::string_view encode_agent_control(AgentControl control);
// The message of a 4-byte token, nullopt if unknown.
std::optional<AgentControl> decode_agent_control(std::string_view token);
// The control message that delivers `signo` (SIGTERM, SIGKILL, SIGINT), nullopt otherwise.
std::optional<AgentControl> agent_control_for_signal(int signo);

// Runs the agent on these fds (0, 1, 2 in `hvdrun --remote-agent`): reads the spec, starts the
// worker, relays, obeys control messages. Returns the exit status for main() to return, or
// does not return when the worker died by a signal (the agent raises the same signal).
// Blocks SIGCHLD and ignores SIGPIPE in the calling process: call it from main() only.
int run_remote_agent(int in_fd, int out_fd, int err_fd);

}  // namespace hvdrun::launcher::ssh
