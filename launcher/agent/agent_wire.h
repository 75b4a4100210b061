// The agent protocol's field encoding (agent_protocol.h): little-endian integers, strings
// with a u32 length, lists with a u32 count. WireReader checks every read against what is
// left and throws ProtocolError naming the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher::agent {

class WireWriter {
 public:
  void u8(std::uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void u32(std::uint32_t value);
  void i32(std::int32_t value) { u32(static_cast<std::uint32_t>(value)); }
  // Throws ProtocolError if `text` holds a NUL byte (`what` names the field).
  void string(std::string_view text, const char* what);
  void list(const std::vector<std::string>& items, const char* what);
  std::string& bytes() noexcept { return out_; }

 private:
  std::string out_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  std::uint8_t u8(const char* what);
  std::uint32_t u32(const char* what);
  std::int32_t i32(const char* what) { return static_cast<std::int32_t>(u32(what)); }
  // NUL bytes refused; at most `max` bytes.
  std::string string(const char* what, std::size_t max = SIZE_MAX);
  // At most `budget` entries (taken from it).
  std::vector<std::string> list(const char* what, std::size_t& budget);
  // Throws unless every byte was read.
  void finish(const char* frame) const;

 private:
  void need(std::size_t size, const char* what) const;
  std::string_view data_;
};

}  // namespace hvdrun::launcher::agent
