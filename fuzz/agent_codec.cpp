// libFuzzer target: the node agent protocol (launcher/agent/agent_protocol.h), read by the
// agent from the launcher and by the launcher from the agent (after any banner). Every frame
// that decodes must encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hvdrun/error.h"
#include "launcher/agent/agent_protocol.h"

namespace {

template <class Frame>
void read_all(std::string_view bytes) {
  hvdrun::launcher::agent::FrameReader<Frame> reader;
  reader.feed(bytes);
  std::size_t consumed = 0;
  try {
    while (auto frame = reader.next()) {
      const std::string again = hvdrun::launcher::agent::encode(*frame);
      if (bytes.substr(consumed, again.size()) != again) __builtin_trap();  // not canonical
      consumed += again.size();
    }
  } catch (const hvdrun::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher::agent;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  read_all<ToAgent>(bytes);
  read_all<FromAgent>(bytes);
  AgentStreamReader stream;
  try {
    stream.feed(bytes);
    while (stream.next()) {
    }
  } catch (const hvdrun::Error&) {
  }
  return 0;
}
