// Codec: round trip of every message type, truncated / oversized / malformed frames, and a
// deterministic random-bytes loop showing decode never crashes.
#include <gtest/gtest.h>

#include <random>

#include "hvdrun/error.h"
#include "rendezvous/protocol.h"
#include "rendezvous/wire_io.h"
#include "tests/rendezvous/test_util.h"

namespace hvdrun::rdzv {
namespace {

std::vector<Message> samples() {
  Challenge c;
  for (std::size_t i = 0; i < c.nonce.size(); ++i) c.nonce[i] = static_cast<std::uint8_t>(i * 7);
  Auth a;
  a.mac.fill(0xAB);
  Assign as{3, 4, 1, 2, 1, 2, {"10.0.0.1", 1}, {"::1", 65535}};
  return {
      Message{1, c},
      Message{2, a},
      Message{0, Join{7, 4242, "node-a", "192.168.1.2", 31337}},
      Message{9, as},
      Message{4, KvSet{"nccl_id", std::string("\0\x01\xff binary", 10)}},
      Message{4, KvGet{"nccl_id", 500}},
      Message{4, KvValue{"k", std::string(128, '\x7f')}},
      Message{5, Barrier{"init", 1000}},
      Message{5, BarrierDone{"init"}},
      Message{6, ErrorMsg{ErrorCode::kDuplicateSlot, "slot 2 already joined"}},
      Message{7, Heartbeat{}},
      Message{7, GenerationEnd{8, EndKind::kHostsUpdated, "host c added"}},
  };
}

Message decode_ok(const std::vector<std::uint8_t>& frame) {
  auto r = decode(frame);
  if (auto* e = std::get_if<DecodeError>(&r)) ADD_FAILURE() << e->text;
  return std::get<Message>(r);
}

std::string decode_error(std::span<const std::uint8_t> frame) {
  auto r = decode(frame);
  if (!std::holds_alternative<DecodeError>(r)) return "<decoded>";
  return std::get<DecodeError>(r).text;
}

// A frame of `type` with the given body bytes (header written by hand).
std::vector<std::uint8_t> frame_of(MsgType type, const std::vector<std::uint8_t>& body) {
  std::vector<std::uint8_t> out = test::frame_header(type, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

TEST(Codec, RoundTripsEveryMessageType) {
  const auto all = samples();
  ASSERT_EQ(all.size(), std::variant_size_v<Body>);
  for (const auto& m : all) {
    const auto frame = encode(m);
    const Message back = decode_ok(frame);
    EXPECT_EQ(back.generation, m.generation);
    ASSERT_EQ(type_of(back.body), type_of(m.body)) << type_name(type_of(m.body));
    EXPECT_EQ(encode(back), frame) << type_name(type_of(m.body));
  }
  const auto join = std::get<Join>(decode_ok(encode(all[2])).body);
  EXPECT_EQ(join.slot, 7u);
  EXPECT_EQ(join.pid, 4242u);
  EXPECT_EQ(join.host, "node-a");
  EXPECT_EQ(join.data_addr, "192.168.1.2");
  EXPECT_EQ(join.data_port, 31337);
  const auto end = std::get<GenerationEnd>(decode_ok(encode(all.back())).body);
  EXPECT_EQ(end.next, 8u);
  EXPECT_EQ(end.kind, EndKind::kHostsUpdated);
  EXPECT_EQ(end.reason, "host c added");
  const auto assign = std::get<Assign>(decode_ok(encode(all[3])).body);
  EXPECT_EQ(assign.rank, 3);
  EXPECT_EQ(assign.cross_size, 2);
  EXPECT_EQ(assign.prev, (PeerAddr{"10.0.0.1", 1}));
  EXPECT_EQ(assign.next, (PeerAddr{"::1", 65535}));
  EXPECT_EQ(std::get<KvSet>(decode_ok(encode(all[4])).body).value.size(), 10u);
  EXPECT_EQ(std::get<ErrorMsg>(decode_ok(encode(all[9])).body).code, ErrorCode::kDuplicateSlot);
}

TEST(Codec, HeaderIsLittleEndian) {
  const auto frame = encode(Message{0x01020304, Heartbeat{}});
  ASSERT_EQ(frame.size(), kHeaderSize);
  EXPECT_EQ(std::string(frame.begin(), frame.begin() + 4), "HVDR");
  EXPECT_EQ(frame[4], kVersion);
  EXPECT_EQ(frame[6], 11);  // type Heartbeat
  EXPECT_EQ(frame[8], 4);   // generation, low byte first
  EXPECT_EQ(frame[11], 1);
  auto h = decode_header(frame);
  ASSERT_TRUE(std::holds_alternative<Header>(h));
  EXPECT_EQ(std::get<Header>(h).generation, 0x01020304u);
  EXPECT_EQ(std::get<Header>(h).type, MsgType::kHeartbeat);
}

TEST(Codec, EveryTruncationIsAnError) {
  for (const auto& m : samples()) {
    const auto frame = encode(m);
    for (std::size_t len = 0; len < frame.size(); ++len) {
      const auto text = decode_error(std::span(frame).first(len));
      EXPECT_NE(text, "<decoded>") << type_name(type_of(m.body)) << " cut at " << len;
    }
  }
  const auto frame = encode(Message{0, KvGet{"abcd", 1}});
  EXPECT_EQ(decode_error(std::span(frame).first(10)), "header truncated: need 20 bytes, have 10");
  EXPECT_EQ(decode_error(std::span(frame).first(22)),
            "frame truncated: need " + std::to_string(frame.size()) + " bytes, have 22");
}

TEST(Codec, BodyShorterThanItsFieldsNamesTheField) {
  // A KvGet whose body holds only the key, without timeout_ms.
  std::vector<std::uint8_t> body{2, 0, 0, 0, 'a', 'b'};
  EXPECT_EQ(decode_error(frame_of(MsgType::kKvGet, body)),
            "KvGet: body truncated: field 'timeout_ms' needs 4 bytes, have 0");
}

TEST(Codec, TrailingBytes) {
  auto frame = encode(Message{0, BarrierDone{"x"}});
  frame.insert(frame.end(), {1, 2, 3});
  EXPECT_EQ(decode_error(frame).rfind("3 trailing bytes", 0), 0u) << decode_error(frame);
  // Extra bytes inside the declared body.
  std::vector<std::uint8_t> body{1, 0, 0, 0, 'x', 9, 9};
  EXPECT_EQ(decode_error(frame_of(MsgType::kBarrierDone, body)),
            "2 trailing bytes in BarrierDone body");
}

// A worker's heartbeat carries what its collectives do; one without it (the server's, and a
// worker's before its first collective) is an empty body.
TEST(Codec, HeartbeatWithAndWithoutProgress) {
  const ProgressReport report{1234,
                              1233,
                              60'000,
                              61'000,
                              "allreduce (float32, 4.0 MiB)",
                              {{1224, 812, 3000, std::uint64_t{4} << 36 | 1}, {1232, 9, 100, 4}}};
  const auto back = std::get<Heartbeat>(decode_ok(encode(Message{3, Heartbeat{report}})).body);
  ASSERT_TRUE(back.progress.has_value());
  EXPECT_EQ(*back.progress, report);
  EXPECT_TRUE(back.progress->waiting());
  EXPECT_FALSE(std::get<Heartbeat>(decode_ok(encode(Message{3, Heartbeat{}})).body).progress);
  EXPECT_EQ(decode_error(frame_of(MsgType::kHeartbeat, {2})),
            "Heartbeat: progress flag 2 (expected 1)");
  EXPECT_NE(decode_error(frame_of(MsgType::kHeartbeat, {1, 0, 0})), "<decoded>");
  std::vector<std::uint8_t> long_text{1};
  long_text.resize(1 + 16, 0);
  for (std::uint8_t b : {200, 0, 0, 0}) long_text.push_back(b);  // 200 > kMaxProgressText
  long_text.resize(long_text.size() + 200, 'x');
  EXPECT_NE(decode_error(frame_of(MsgType::kHeartbeat, long_text)), "<decoded>");
}

TEST(Codec, BadMagicVersionTypeReserved) {
  auto frame = encode(Message{0, Heartbeat{}});
  auto bad = frame;
  bad[0] = 0x78, bad[1] = 0x56, bad[2] = 0x34, bad[3] = 0x12;
  EXPECT_EQ(decode_error(bad), "bad magic 0x12345678 (expected 0x52445648)");
  bad = frame;
  bad[4] = 7;
  EXPECT_EQ(decode_error(bad),
            "version 7 unsupported (expected 3: are the launcher and libhvdrun from one hvdrun "
            "release?)");
  bad = frame;
  bad[6] = 99;
  EXPECT_EQ(decode_error(bad), "unknown message type 99 (expected 1..12)");
  bad[6] = 0;
  EXPECT_EQ(decode_error(bad), "unknown message type 0 (expected 1..12)");
  bad = frame;
  bad[16] = 5;
  EXPECT_EQ(decode_error(bad), "reserved field 0x00000005 (expected 0x00000000)");
}

TEST(Codec, OversizedBodyIsRefusedFromTheHeader) {
  const std::vector<std::uint8_t> header = test::frame_header(MsgType::kKvSet, kMaxBody + 1);
  auto h = decode_header(header);
  ASSERT_TRUE(std::holds_alternative<DecodeError>(h));
  EXPECT_EQ(std::get<DecodeError>(h).text, "body length 16777217 exceeds 16777216");
  EXPECT_EQ(decode_error(header), "body length 16777217 exceeds 16777216");
}

TEST(Codec, OversizedStringsAndBlobs) {
  std::vector<std::uint8_t> body;
  wire::Writer w(body);
  w.u32(5000);  // key length, no bytes follow: the limit is checked before the bytes
  EXPECT_EQ(decode_error(frame_of(MsgType::kKvGet, body)),
            "KvGet: string 'key' length 5000 exceeds 4096");

  body.clear();
  w.str("key", "k", kMaxString);
  w.u32(kMaxBlob + 1);
  EXPECT_EQ(decode_error(frame_of(MsgType::kKvSet, body)),
            "KvSet: blob 'value' length 1048577 exceeds 1048576");

  // A neighbour's address is a string like any other.
  body.clear();
  for (int i = 0; i < 6; ++i) w.i32(0);
  w.u32(kMaxString + 1);
  EXPECT_EQ(decode_error(frame_of(MsgType::kAssign, body)),
            "Assign: string 'peer addr' length 4097 exceeds 4096");
}

TEST(Codec, UnknownErrorCodeIsRefused) {
  std::vector<std::uint8_t> body;
  wire::Writer w(body);
  w.u16(42);
  w.str("text", "x", kMaxString);
  EXPECT_EQ(decode_error(frame_of(MsgType::kError, body)),
            "Error: error code 42 unknown (expected 1..7)");
}

TEST(Codec, UnknownGenerationEndKindIsRefused) {
  std::vector<std::uint8_t> body;
  wire::Writer w(body);
  w.u32(3);
  w.u8(9);
  w.str("reason", "x", kMaxString);
  EXPECT_EQ(decode_error(frame_of(MsgType::kGenerationEnd, body)),
            "GenerationEnd: generation end kind 9 unknown (expected 1..2)");
}

TEST(Codec, EncodeRefusesOversizedFields) {
  EXPECT_THROW(encode(Message{0, KvGet{std::string(kMaxString + 1, 'k'), 0}}), ProtocolError);
  EXPECT_THROW(encode(Message{0, KvSet{"k", std::string(kMaxBlob + 1, 'v')}}), ProtocolError);
  EXPECT_NO_THROW(encode(Message{0, KvSet{"k", std::string(kMaxBlob, 'v')}}));
}

TEST(Codec, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  std::size_t decoded = 0;
  const auto valid = samples();
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::uint8_t> bytes;
    if (i % 2 == 0) {
      // Mutate a valid frame: flip a few bytes past the magic.
      bytes = encode(valid[static_cast<std::size_t>(i / 2) % valid.size()]);
      for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(rng());
    } else {
      bytes.resize(rng() % 80);
      for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    }
    (void)decode_header(bytes);
    auto r = decode(bytes);
    if (auto* m = std::get_if<Message>(&r)) {
      ++decoded;
      EXPECT_EQ(encode(*m), bytes);  // anything accepted re-encodes to the same bytes
    }
  }
  EXPECT_GT(decoded, 0u);  // the mutations reach the body decoders, not only the header
}

}  // namespace
}  // namespace hvdrun::rdzv
