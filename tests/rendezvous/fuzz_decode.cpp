// libFuzzer entry: decode() and decode_header() must never crash on any input, and a
// decoded message must re-encode to the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rendezvous/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  (void)hvdrun::rdzv::decode_header(bytes);
  auto decoded = hvdrun::rdzv::decode(bytes);
  if (auto* m = std::get_if<hvdrun::rdzv::Message>(&decoded)) {
    auto again = hvdrun::rdzv::encode(*m);
    if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  }
  return 0;
}
