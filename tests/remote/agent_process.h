// AgentProcess: the test agent binary (`--node-agent`) run as a child with its stdin, stdout
// and stderr on pipes, for the node agent tests: frames in, frames out. Every wait is bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "launcher/agent/agent_protocol.h"

namespace hvdrun::launcher::ssh::test {

class AgentProcess {
 public:
  AgentProcess();   // starts TEST_AGENT --node-agent
  ~AgentProcess();  // SIGKILLs and reaps it if still running
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  void write(const std::string& bytes);
  void close_stdin();
  void send(const agent::ToAgent& frame) { write(agent::encode(frame)); }
  // The agent's next frame (after its preamble), nullopt on timeout or EOF. Throws
  // ProtocolError on a bad frame.
  std::optional<agent::FromAgent> next_frame(std::chrono::milliseconds timeout);
  // Reads both streams to EOF and reaps the agent; nullopt on timeout. Returns the wait status.
  std::optional<int> finish(std::chrono::milliseconds timeout);
  // Reads both streams to EOF (whoever holds them); false on timeout.
  bool read_to_eof(std::chrono::milliseconds timeout);
  // Reaps the agent, reading nothing; its wait status, nullopt on timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  pid_t pid() const { return pid_; }

 private:
  bool pump(int timeout_ms);
  pid_t pid_ = -1;
  int in_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  std::size_t fed_ = 0;  // bytes of out_ given to reader_
  agent::AgentStreamReader reader_;
};

// Whether process `pid` is gone (or a zombie nobody reaped yet).
bool process_gone(pid_t pid);
// Waits up to `timeout` for process_gone(pid).
bool wait_gone(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace hvdrun::launcher::ssh::test
