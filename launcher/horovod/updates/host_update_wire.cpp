// The worker notification messages (host_update_wire.h).
#include "launcher/horovod/updates/host_update_wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "hvdrun/error.h"

namespace hvdrun::launcher::horovod {
namespace {

constexpr std::string_view kWorkerModule = "horovod.runner.elastic.worker";

void append_le(std::string& out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// GLOBAL: module and name, each ended by a line feed.
void global(std::string& out, std::string_view name) {
  out += 'c';
  out += kWorkerModule;
  out += '\n';
  out += name;
  out += '\n';
}

// BINUNICODE: a 4-byte length and the UTF-8 bytes.
void text(std::string& out, std::string_view value) {
  out += 'X';
  append_le(out, value.size(), 4);
  out += value;
}

std::array<unsigned char, kDigestSize> digest_of(std::string_view key, std::string_view body) {
  std::array<unsigned char, kDigestSize> mac{};
  unsigned int length = 0;
  static constexpr unsigned char kEmpty = 0;
  const void* k = key.empty() ? &kEmpty : static_cast<const void*>(key.data());
  if (HMAC(EVP_sha256(), k, static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac.data(),
           &length) == nullptr ||
      length != kDigestSize) {
    throw Error("HMAC-SHA256 of a Horovod notification failed");
  }
  return mac;
}

}  // namespace

std::string hosts_updated_request(std::int64_t timestamp, HostUpdate update) {
  std::string out = "\x80\x02";  // PROTO 2
  global(out, "HostsUpdatedRequest");
  out += ")\x81";  // EMPTY_TUPLE, NEWOBJ: cls.__new__(cls)
  out += "}(";     // EMPTY_DICT, MARK: its state
  text(out, "timestamp");
  out += '\x8a';  // LONG1: 8 bytes, two's complement
  out += '\x08';
  append_le(out, static_cast<std::uint64_t>(timestamp), 8);
  text(out, "res");
  global(out, "HostUpdateResult");
  out += 'K';  // BININT1
  out += static_cast<char>(update);
  out += "\x85R";  // TUPLE1, REDUCE: HostUpdateResult(update)
  out += "ub.";    // SETITEMS, BUILD, STOP
  return out;
}

std::string frame_message(std::string_view key, std::string_view body) {
  const auto mac = digest_of(key, body);
  std::string out(reinterpret_cast<const char*>(mac.data()), mac.size());
  append_le(out, body.size(), 4);
  out += body;
  return out;
}

std::optional<FrameHeader> read_frame_header(std::string_view header, std::size_t max_body) {
  if (header.size() != kFrameHeaderSize) return std::nullopt;
  FrameHeader out;
  std::copy_n(header.begin(), kDigestSize, reinterpret_cast<char*>(out.digest.data()));
  std::uint32_t length = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    length |= static_cast<std::uint32_t>(static_cast<unsigned char>(header[kDigestSize + i]))
              << (8 * i);
  }
  if (static_cast<std::int32_t>(length) < 0 || length > max_body) return std::nullopt;
  out.body_size = length;
  return out;
}

bool frame_signed(std::string_view key, const FrameHeader& header, std::string_view body) {
  const auto mac = digest_of(key, body);
  return CRYPTO_memcmp(mac.data(), header.digest.data(), kDigestSize) == 0;
}

}  // namespace hvdrun::launcher::horovod
