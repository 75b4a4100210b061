// libFuzzer target: the remote agent's codec (launcher/ssh/remote_agent.h), which an agent
// reads from its SSH channel: the spec frame (header, payload) and the control tokens. A
// spec that decodes must encode to the same frame.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hvdrun/error.h"
#include "launcher/agent/remote_agent.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher::ssh;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    (void)decode_agent_header(bytes.substr(0, kAgentHeaderSize));
  } catch (const hvdrun::Error&) {
  }
  try {
    (void)decode_agent_payload(bytes);
  } catch (const hvdrun::Error&) {
  }
  try {
    const AgentSpec spec = decode_agent_spec(bytes);
    if (encode_agent_spec(spec) != bytes) __builtin_trap();  // not one frame per spec
  } catch (const hvdrun::Error&) {
  }
  if (size >= kAgentControlSize) (void)decode_agent_control(bytes.substr(0, kAgentControlSize));
  return 0;
}
