// Little-endian byte writer and bounds-checked reader used by the codec.
#include "rendezvous/wire_io.h"

#include <cstring>

#include "hvdrun/error.h"

namespace hvdrun::rdzv::wire {

void Writer::u8(std::uint8_t v) {
  out_.push_back(v);
}

void Writer::u16(std::uint16_t v) {
  out_.push_back(static_cast<std::uint8_t>(v));
  out_.push_back(static_cast<std::uint8_t>(v >> 8));
}

void Writer::u32(std::uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out_.push_back(static_cast<std::uint8_t>(v >> shift));
}

void Writer::u64(std::uint64_t v) {
  for (int shift = 0; shift < 64; shift += 8) out_.push_back(static_cast<std::uint8_t>(v >> shift));
}

void Writer::raw(std::span<const std::uint8_t> bytes) {
  out_.insert(out_.end(), bytes.begin(), bytes.end());
}

void Writer::str(std::string_view field, std::string_view value, std::uint32_t limit) {
  if (value.size() > limit) {
    throw ProtocolError("cannot encode '" + std::string(field) + "': length " +
                        std::to_string(value.size()) + " exceeds " + std::to_string(limit));
  }
  u32(static_cast<std::uint32_t>(value.size()));
  const auto* p = reinterpret_cast<const std::uint8_t*>(value.data());
  out_.insert(out_.end(), p, p + value.size());
}

void Writer::patch_u32(std::size_t offset, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.at(offset + i) = static_cast<std::uint8_t>(v >> (8 * i));
}

bool Reader::fail(std::string text) {
  if (!error_) error_ = std::move(text);
  return false;
}

bool Reader::take(std::string_view field, std::size_t n) {
  if (error_) return false;
  if (n > remaining()) {
    return fail("body truncated: field '" + std::string(field) + "' needs " + std::to_string(n) +
                " bytes, have " + std::to_string(remaining()));
  }
  return true;
}

bool Reader::u8(std::string_view field, std::uint8_t& v) {
  if (!take(field, 1)) return false;
  v = bytes_[pos_++];
  return true;
}

bool Reader::u16(std::string_view field, std::uint16_t& v) {
  if (!take(field, 2)) return false;
  v = static_cast<std::uint16_t>(bytes_[pos_] | (bytes_[pos_ + 1] << 8));
  pos_ += 2;
  return true;
}

bool Reader::u32(std::string_view field, std::uint32_t& v) {
  if (!take(field, 4)) return false;
  v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(bytes_[pos_ + i]) << (8 * i);
  pos_ += 4;
  return true;
}

bool Reader::i32(std::string_view field, std::int32_t& v) {
  std::uint32_t u = 0;
  if (!u32(field, u)) return false;
  v = static_cast<std::int32_t>(u);
  return true;
}

bool Reader::u64(std::string_view field, std::uint64_t& v) {
  if (!take(field, 8)) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(bytes_[pos_ + i]) << (8 * i);
  pos_ += 8;
  return true;
}

bool Reader::raw(std::string_view field, std::span<std::uint8_t> out) {
  if (!take(field, out.size())) return false;
  if (!out.empty()) std::memcpy(out.data(), bytes_.data() + pos_, out.size());
  pos_ += out.size();
  return true;
}

bool Reader::str(std::string_view field, std::string& v, std::uint32_t limit,
                 std::string_view kind) {
  std::uint32_t len = 0;
  if (!u32(field, len)) return false;
  if (len > limit) {
    return fail(std::string(kind) + " '" + std::string(field) + "' length " + std::to_string(len) +
                " exceeds " + std::to_string(limit));
  }
  if (!take(field, len)) return false;
  v.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return true;
}

}  // namespace hvdrun::rdzv::wire
