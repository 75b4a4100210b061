// The rendezvous wire codec: encode(Message) and bounds-checked decode of headers and frames.
// Layouts of every body are in this file only; see protocol.h for the frame format.
#include "rendezvous/protocol.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "hvdrun/error.h"
#include "rendezvous/wire_io.h"

namespace hvdrun::rdzv {
namespace {

constexpr std::uint16_t kMaxType = static_cast<std::uint16_t>(MsgType::kGenerationEnd);
constexpr std::uint16_t kMaxErrorCode = static_cast<std::uint16_t>(ErrorCode::kNotMember);

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

void encode_body(wire::Writer& w, const Body& body) {
  std::visit(
      [&w](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Challenge>) {
          w.raw(m.nonce);
        } else if constexpr (std::is_same_v<T, Auth>) {
          w.raw(m.mac);
        } else if constexpr (std::is_same_v<T, Join>) {
          w.u32(m.slot);
          w.u32(m.pid);
          w.str("host", m.host, kMaxString);
          w.str("data_addr", m.data_addr, kMaxString);
          w.u16(m.data_port);
        } else if constexpr (std::is_same_v<T, Assign>) {
          for (auto v : {m.rank, m.size, m.local_rank, m.local_size, m.cross_rank, m.cross_size})
            w.i32(v);
          for (const PeerAddr* p : {&m.prev, &m.next}) {
            w.str("peer addr", p->addr, kMaxString);
            w.u16(p->port);
          }
        } else if constexpr (std::is_same_v<T, KvSet> || std::is_same_v<T, KvValue>) {
          w.str("key", m.key, kMaxString);
          w.str("value", m.value, kMaxBlob);
        } else if constexpr (std::is_same_v<T, KvGet>) {
          w.str("key", m.key, kMaxString);
          w.u32(m.timeout_ms);
        } else if constexpr (std::is_same_v<T, Barrier>) {
          w.str("name", m.name, kMaxString);
          w.u32(m.timeout_ms);
        } else if constexpr (std::is_same_v<T, BarrierDone>) {
          w.str("name", m.name, kMaxString);
        } else if constexpr (std::is_same_v<T, Heartbeat>) {
          if (m.progress) {
            w.u8(1);
            for (auto v : {m.progress->entered, m.progress->finished, m.progress->in_ms,
                           m.progress->finished_ago_ms})
              w.u32(v);
            w.str("progress", m.progress->what, kMaxProgressText);
            const auto count =
                std::min<std::size_t>(m.progress->samples.size(), kMaxProgressSamples);
            w.u32(static_cast<std::uint32_t>(count));
            for (std::size_t i = 0; i < count; ++i) {
              const TimedSample& sample = m.progress->samples[i];
              for (auto v : {sample.sequence, sample.inside_us, sample.ago_us}) w.u32(v);
              w.u64(sample.what);
            }
          }
        } else if constexpr (std::is_same_v<T, GenerationEnd>) {
          w.u32(m.next);
          w.u8(static_cast<std::uint8_t>(m.kind));
          w.str("reason", m.reason, kMaxString);
        } else {
          static_assert(std::is_same_v<T, ErrorMsg>);
          w.u16(static_cast<std::uint16_t>(m.code));
          w.str("text", m.text, kMaxString);
        }
      },
      body);
}

bool read_assign(wire::Reader& r, Assign& a) {
  for (auto* v : {&a.rank, &a.size, &a.local_rank, &a.local_size, &a.cross_rank, &a.cross_size})
    r.i32("assign", *v);
  for (PeerAddr* p : {&a.prev, &a.next}) {
    if (!r.str("peer addr", p->addr, kMaxString) || !r.u16("peer port", p->port)) return false;
  }
  return true;
}

bool read_error(wire::Reader& r, ErrorMsg& e) {
  std::uint16_t code = 0;
  if (!r.u16("error code", code)) return false;
  if (code < 1 || code > kMaxErrorCode) {
    return r.fail("error code " + std::to_string(code) + " unknown (expected 1.." +
                  std::to_string(kMaxErrorCode) + ")");
  }
  e.code = static_cast<ErrorCode>(code);
  return r.str("text", e.text, kMaxString);
}

// Reads the body of `type`; the result is valid only if r.error() is empty afterwards.
Body read_body(wire::Reader& r, MsgType type) {
  switch (type) {
    case MsgType::kChallenge: {
      Challenge c;
      r.raw("nonce", c.nonce);
      return c;
    }
    case MsgType::kAuth: {
      Auth a;
      r.raw("mac", a.mac);
      return a;
    }
    case MsgType::kJoin: {
      Join j;
      r.u32("slot", j.slot) && r.u32("pid", j.pid) && r.str("host", j.host, kMaxString) &&
          r.str("data_addr", j.data_addr, kMaxString) && r.u16("data_port", j.data_port);
      return j;
    }
    case MsgType::kAssign: {
      Assign a;
      read_assign(r, a);
      return a;
    }
    case MsgType::kKvSet: {
      KvSet s;
      r.str("key", s.key, kMaxString) && r.str("value", s.value, kMaxBlob, "blob");
      return s;
    }
    case MsgType::kKvGet: {
      KvGet g;
      r.str("key", g.key, kMaxString) && r.u32("timeout_ms", g.timeout_ms);
      return g;
    }
    case MsgType::kKvValue: {
      KvValue v;
      r.str("key", v.key, kMaxString) && r.str("value", v.value, kMaxBlob, "blob");
      return v;
    }
    case MsgType::kBarrier: {
      Barrier b;
      r.str("name", b.name, kMaxString) && r.u32("timeout_ms", b.timeout_ms);
      return b;
    }
    case MsgType::kBarrierDone: {
      BarrierDone b;
      r.str("name", b.name, kMaxString);
      return b;
    }
    case MsgType::kError: {
      ErrorMsg e;
      read_error(r, e);
      return e;
    }
    case MsgType::kHeartbeat: {
      Heartbeat h;
      if (r.remaining() == 0) return h;
      std::uint8_t present = 0;
      if (!r.u8("progress flag", present)) return h;
      if (present != 1) {
        r.fail("progress flag " + std::to_string(present) + " (expected 1)");
        return h;
      }
      ProgressReport p;
      const bool read = r.u32("entered", p.entered) && r.u32("finished", p.finished) &&
                        r.u32("in_ms", p.in_ms) && r.u32("finished_ago_ms", p.finished_ago_ms) &&
                        r.str("progress", p.what, kMaxProgressText);
      std::uint32_t count = 0;
      if (read && r.u32("samples", count)) {
        if (count > kMaxProgressSamples) {
          r.fail("samples " + std::to_string(count) + " (at most " +
                 std::to_string(kMaxProgressSamples) + ")");
          return h;
        }
        for (std::uint32_t i = 0; i < count; ++i) {
          TimedSample sample;
          if (!r.u32("sample", sample.sequence) || !r.u32("sample", sample.inside_us) ||
              !r.u32("sample", sample.ago_us) || !r.u64("sample", sample.what)) {
            break;
          }
          p.samples.push_back(sample);
        }
      }
      h.progress = std::move(p);
      return h;
    }
    case MsgType::kGenerationEnd: {
      GenerationEnd g;
      std::uint8_t kind = 0;
      if (r.u32("next", g.next) && r.u8("kind", kind)) {
        if (kind != static_cast<std::uint8_t>(EndKind::kBroken) &&
            kind != static_cast<std::uint8_t>(EndKind::kHostsUpdated)) {
          r.fail("generation end kind " + std::to_string(kind) + " unknown (expected 1..2)");
        } else {
          g.kind = static_cast<EndKind>(kind);
          r.str("reason", g.reason, kMaxString);
        }
      }
      return g;
    }
  }
  r.fail("unknown message type " + std::to_string(static_cast<unsigned>(type)));
  return Heartbeat{};
}

}  // namespace

MsgType type_of(const Body& body) noexcept {
  return static_cast<MsgType>(body.index() + 1);
}

std::string type_name(MsgType type) {
  static constexpr const char* kNames[] = {"Challenge",   "Auth",  "Join",      "Assign",
                                           "KvSet",       "KvGet", "KvValue",   "Barrier",
                                           "BarrierDone", "Error", "Heartbeat", "GenerationEnd"};
  const auto t = static_cast<std::uint16_t>(type);
  if (t >= 1 && t <= kMaxType) return kNames[t - 1];
  return "type " + std::to_string(t);
}

std::vector<std::uint8_t> encode(const Message& message) {
  std::vector<std::uint8_t> out;
  out.reserve(64);
  wire::Writer w(out);
  w.u32(kMagic);
  w.u16(kVersion);
  w.u16(static_cast<std::uint16_t>(type_of(message.body)));
  w.u32(message.generation);
  w.u32(0);  // body length, patched below
  w.u32(0);  // reserved
  encode_body(w, message.body);
  const std::size_t body = out.size() - kHeaderSize;
  if (body > kMaxBody) {
    throw ProtocolError("cannot encode " + type_name(type_of(message.body)) + ": body length " +
                        std::to_string(body) + " exceeds " + std::to_string(kMaxBody));
  }
  w.patch_u32(12, static_cast<std::uint32_t>(body));
  return out;
}

std::variant<Header, DecodeError> decode_header(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) {
    return DecodeError{"header truncated: need " + std::to_string(kHeaderSize) + " bytes, have " +
                       std::to_string(bytes.size())};
  }
  wire::Reader r(bytes.first(kHeaderSize));
  std::uint32_t magic = 0, generation = 0, length = 0, reserved = 0;
  std::uint16_t version = 0, type = 0;
  r.u32("magic", magic);
  r.u16("version", version);
  r.u16("type", type);
  r.u32("generation", generation);
  r.u32("length", length);
  r.u32("reserved", reserved);
  if (magic != kMagic) {
    return DecodeError{"bad magic " + hex32(magic) + " (expected " + hex32(kMagic) + ")"};
  }
  if (version != kVersion) {
    return DecodeError{"version " + std::to_string(version) + " unsupported (expected " +
                       std::to_string(kVersion) +
                       ": are the launcher and libhvdrun from one hvdrun release?)"};
  }
  if (type < 1 || type > kMaxType) {
    return DecodeError{"unknown message type " + std::to_string(type) + " (expected 1.." +
                       std::to_string(kMaxType) + ")"};
  }
  if (length > kMaxBody) {
    return DecodeError{"body length " + std::to_string(length) + " exceeds " +
                       std::to_string(kMaxBody)};
  }
  if (reserved != 0) {
    return DecodeError{"reserved field " + hex32(reserved) + " (expected 0x00000000)"};
  }
  return Header{static_cast<MsgType>(type), generation, length};
}

std::variant<Message, DecodeError> decode(std::span<const std::uint8_t> frame) {
  try {
    auto h = decode_header(frame);
    if (auto* e = std::get_if<DecodeError>(&h)) return std::move(*e);
    const auto& header = std::get<Header>(h);
    const std::size_t need = kHeaderSize + header.length;
    if (frame.size() < need) {
      return DecodeError{"frame truncated: need " + std::to_string(need) + " bytes, have " +
                         std::to_string(frame.size())};
    }
    if (frame.size() > need) {
      return DecodeError{std::to_string(frame.size() - need) + " trailing bytes after the " +
                         std::to_string(need) + "-byte frame"};
    }
    wire::Reader r(frame.subspan(kHeaderSize, header.length));
    Message m{header.generation, read_body(r, header.type)};
    if (r.error()) return DecodeError{type_name(header.type) + ": " + *r.error()};
    if (r.remaining() != 0) {
      return DecodeError{std::to_string(r.remaining()) + " trailing bytes in " +
                         type_name(header.type) + " body"};
    }
    return m;
  } catch (const std::exception& e) {  // only std::bad_alloc can reach here
    return DecodeError{std::string("decode failed: ") + e.what()};
  }
}

}  // namespace hvdrun::rdzv
