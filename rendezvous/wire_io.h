// Little-endian byte writer and bounds-checked reader used by the codec (protocol.cpp).
// Reader never throws: the first failure is kept as text and every later read fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::rdzv::wire {

class Writer {
 public:
  explicit Writer(std::vector<std::uint8_t>& out) : out_(out) {}
  void u8(std::uint8_t v);
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void u64(std::uint64_t v);
  void raw(std::span<const std::uint8_t> bytes);
  // u32 length + bytes; throws ProtocolError naming `field` if longer than `limit`.
  void str(std::string_view field, std::string_view value, std::uint32_t limit);
  // Overwrites 4 bytes at `offset` (used to patch the body length into the header).
  void patch_u32(std::size_t offset, std::uint32_t v);

 private:
  std::vector<std::uint8_t>& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool u8(std::string_view field, std::uint8_t& v);
  bool u16(std::string_view field, std::uint16_t& v);
  bool u32(std::string_view field, std::uint32_t& v);
  bool i32(std::string_view field, std::int32_t& v);
  bool u64(std::string_view field, std::uint64_t& v);
  bool raw(std::string_view field, std::span<std::uint8_t> out);
  // u32 length (checked against `limit` and the bytes left before allocating) + bytes.
  bool str(std::string_view field, std::string& v, std::uint32_t limit,
           std::string_view kind = "string");
  bool fail(std::string text);

  std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  const std::optional<std::string>& error() const noexcept { return error_; }

 private:
  bool take(std::string_view field, std::size_t n);

  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
  std::optional<std::string> error_;
};

}  // namespace hvdrun::rdzv::wire
