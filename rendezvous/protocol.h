// Wire protocol of the hvdrun rendezvous: message types and the one codec.
// encode() and decode() are pure functions over bytes (no sockets), bounds-checked,
// callable by a fuzzer.
//
// Frame = 20-byte header + body, all integers little-endian:
//   u32 magic "HVDR" | u16 version | u16 type | u32 generation | u32 body length | u32 reserved(0)
// Body fields: u8/u16/u32/i32 little-endian; strings and blobs are u32 length + bytes.
// Limits: body <= kMaxBody, string <= kMaxString, blob <= kMaxBlob; a generation has at most
// kMaxPeers members.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "rendezvous/progress.h"

namespace hvdrun::rdzv {

inline constexpr std::uint32_t kMagic = 0x52445648;  // bytes 'H','V','D','R'
// 2: the one-round-trip handshake (no AuthOk) and an ASSIGN with the ring neighbours only.
inline constexpr std::uint16_t kVersion = 3;
inline constexpr std::size_t kHeaderSize = 20;
inline constexpr std::uint32_t kMaxBody = 16u << 20;
inline constexpr std::uint32_t kMaxString = 4096;
inline constexpr std::uint32_t kMaxBlob = 1u << 20;
inline constexpr std::uint32_t kMaxPeers = 65536;
inline constexpr std::size_t kNonceSize = 32;
inline constexpr std::size_t kMacSize = 32;

// Version 2 numbering. The handshake takes one round trip: the server's Challenge, then the
// client's Auth with its first request right behind it. Auth has no answer when it is right;
// when it is wrong the server answers kError kAuthFailed and closes.
enum class MsgType : std::uint16_t {
  kChallenge = 1,  // server -> client, first message on a connection; its header carries the
                   // server's current generation (the one a Join is for)
  kAuth = 2,       // client -> server, HMAC of the nonce
  kJoin = 3,       // client -> server
  kAssign = 4,     // server -> client, when the generation is complete
  kKvSet = 5,      // client -> server, answered by kKvValue echoing the key
  kKvGet = 6,      // client -> server, held until the key exists or timeout
  kKvValue = 7,    // server -> client
  kBarrier = 8,    // client -> server, held until every rank of the generation entered
  kBarrierDone = 9,
  kError = 10,          // either way; the sender then closes the connection
  kHeartbeat = 11,      // every heartbeat interval: client -> server from the challenge on
                        // (Auth may ride ahead of the first), server -> client once joined
  kGenerationEnd = 12,  // server -> client push: the generation in the header ends
};

struct Challenge {
  std::array<std::uint8_t, kNonceSize> nonce{};
};
struct Auth {
  std::array<std::uint8_t, kMacSize> mac{};
};
struct Join {
  std::uint32_t slot = 0;  // the worker's key in the job (HVDRUN_SLOT), kept for its life
  std::uint32_t pid = 0;
  std::string host;       // worker's hostname, for messages
  std::string data_addr;  // address other ranks use to reach this worker's data socket
  std::uint16_t data_port = 0;
};
struct PeerAddr {
  std::string addr;
  std::uint16_t port = 0;
  bool operator==(const PeerAddr&) const = default;
};
// What a worker needs of its generation: its place and topology, and the data listeners of its
// ring neighbours, ranks (rank - 1) and (rank + 1) mod size (its own in a world of one). Its
// size is constant, whatever the job's: a job's assignments take O(n) bytes.
struct Assign {
  std::int32_t rank = 0, size = 0, local_rank = 0, local_size = 0, cross_rank = 0, cross_size = 0;
  PeerAddr prev, next;
};
struct KvSet {
  std::string key;
  std::string value;  // opaque blob
};
struct KvGet {
  std::string key;
  std::uint32_t timeout_ms = 0;
};
struct KvValue {
  std::string key;
  std::string value;
};
struct Barrier {
  std::string name;
  // Server-side deadline: 0 = none; else kError kTimeout naming the missing ranks.
  std::uint32_t timeout_ms = 0;
};
struct BarrierDone {
  std::string name;
};
// Client -> server: the worker's collectives (absent before its first generation formed, and
// from the server).
struct Heartbeat {
  std::optional<ProgressReport> progress;
};
// Why a generation ends while its members live on: kBroken (a member failed: abort what runs,
// restore, re-join) or kHostsUpdated (workers were added or removed: re-join at the next
// commit, without restoring). The members re-join generation `next` on the same connection.
enum class EndKind : std::uint8_t { kBroken = 1, kHostsUpdated = 2 };
struct GenerationEnd {
  std::uint32_t next = 0;
  EndKind kind = EndKind::kBroken;
  std::string reason;  // "rank 2 (host a, pid 123) was killed by SIGKILL"
};
enum class ErrorCode : std::uint16_t {
  kAuthFailed = 1,
  kBadRequest = 2,
  kTimeout = 3,
  kStaleGeneration = 4,
  kDuplicateSlot = 5,
  kJobFailed = 6,
  kNotMember = 7,  // the worker is not a member of the generation it tried to join
};
struct ErrorMsg {
  ErrorCode code = ErrorCode::kBadRequest;
  std::string text;
};

// Alternatives in MsgType order (type_of() relies on it).
using Body = std::variant<Challenge, Auth, Join, Assign, KvSet, KvGet, KvValue, Barrier,
                          BarrierDone, ErrorMsg, Heartbeat, GenerationEnd>;

struct Message {
  std::uint32_t generation = 0;
  Body body;
};

struct Header {
  MsgType type{};
  std::uint32_t generation = 0;
  std::uint32_t length = 0;  // body length, already checked against kMaxBody
};

// Why a frame was refused; text names the field and both values where there are two.
struct DecodeError {
  std::string text;
};

MsgType type_of(const Body& body) noexcept;
// "Join", "KvGet", ... for logs and error messages; "type 99" style text for unknown values.
std::string type_name(MsgType type);
// Throws ProtocolError naming the field if a string, blob or the body exceeds its limit (so a
// sender learns it before the peer refuses the frame).
std::vector<std::uint8_t> encode(const Message& message);
// Header only (the first kHeaderSize bytes; fewer is an error): checks magic, version, type,
// length and reserved.
std::variant<Header, DecodeError> decode_header(std::span<const std::uint8_t> bytes);
// A whole frame (header + body); trailing or missing bytes are errors.
std::variant<Message, DecodeError> decode(std::span<const std::uint8_t> frame);

}  // namespace hvdrun::rdzv
