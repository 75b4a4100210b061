// The messages of Horovod's worker notification service (horovod/runner/common/util/network.py
// Wire): a frame is the HMAC-SHA256 of the body under the worker's key (32 bytes), the body's
// length (int32, little-endian) and the body, a pickle. hvdrun sends one request, a
// HostsUpdatedRequest(timestamp, HostUpdateResult) that tells the worker (rank 0) the hosts
// changed, and reads the worker's signed reply (a pickled AckResponse).
// Thread: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hvdrun::launcher::horovod {

// Horovod's HostUpdateResult flags.
enum class HostUpdate : std::uint8_t { kRemoved = 1, kAdded = 2, kMixed = 3 };

// The pickle of horovod.runner.elastic.worker.HostsUpdatedRequest(timestamp, HostUpdateResult(
// update)) (protocol 2: a GLOBAL, NEWOBJ and BUILD, with the flag made by REDUCE).
std::string hosts_updated_request(std::int64_t timestamp, HostUpdate update);

inline constexpr std::size_t kDigestSize = 32;
inline constexpr std::size_t kFrameHeaderSize = kDigestSize + 4;
// The longest reply body read (an AckResponse pickles to about 60 bytes).
inline constexpr std::size_t kMaxReplyBody = 64 * 1024;

// `body` framed and signed with `key`.
std::string frame_message(std::string_view key, std::string_view body);

// A frame's header: the digest and the body length, or nullopt when the length is negative or
// over `max_body`.
struct FrameHeader {
  std::array<unsigned char, kDigestSize> digest{};
  std::size_t body_size = 0;
};
std::optional<FrameHeader> read_frame_header(std::string_view header, std::size_t max_body);

// Whether `digest` signs `body` under `key` (compared in constant time).
bool frame_signed(std::string_view key, const FrameHeader& header, std::string_view body);

}  // namespace hvdrun::launcher::horovod
