// libFuzzer target: the rendezvous wire codec (rendezvous/protocol.h) on hostile bytes. Any
// input is decoded as a header and as a whole frame; a frame that decodes must encode again
// to exactly its own bytes (one encoding per message: nothing in a frame goes unchecked).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "rendezvous/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::rdzv;
  const std::span<const std::uint8_t> bytes(data, size);
  (void)decode_header(bytes);
  const auto decoded = decode(bytes);
  const auto* message = std::get_if<Message>(&decoded);
  if (message == nullptr) return 0;
  const std::vector<std::uint8_t> again = encode(*message);
  if (!std::equal(again.begin(), again.end(), bytes.begin(), bytes.end())) {
    __builtin_trap();  // encode and decode disagree
  }
  return 0;
}
