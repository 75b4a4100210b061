// Field encoding of the agent protocol (agent_wire.h).
#include "launcher/agent/agent_wire.h"

#include "hvdrun/error.h"

namespace hvdrun::launcher::agent {

void WireWriter::u32(std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void WireWriter::string(std::string_view text, const char* what) {
  if (text.find('\0') != std::string_view::npos) {
    throw ProtocolError(std::string("agent protocol: ") + what + " contains a NUL byte");
  }
  u32(static_cast<std::uint32_t>(text.size()));
  out_.append(text);
}

void WireWriter::list(const std::vector<std::string>& items, const char* what) {
  u32(static_cast<std::uint32_t>(items.size()));
  for (const auto& item : items) string(item, what);
}

void WireReader::need(std::size_t size, const char* what) const {
  if (size > data_.size()) {
    throw ProtocolError(std::string("agent protocol: frame truncated in ") + what + ": needs " +
                        std::to_string(size) + " bytes, " + std::to_string(data_.size()) + " left");
  }
}

std::uint8_t WireReader::u8(const char* what) {
  need(1, what);
  const auto value = static_cast<std::uint8_t>(data_[0]);
  data_.remove_prefix(1);
  return value;
}

std::uint32_t WireReader::u32(const char* what) {
  need(4, what);
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(data_[i])) << (8 * i);
  }
  data_.remove_prefix(4);
  return value;
}

std::string WireReader::string(const char* what, std::size_t max) {
  const std::uint32_t size = u32(what);
  if (size > max) {
    throw ProtocolError(std::string("agent protocol: ") + what + " of " + std::to_string(size) +
                        " bytes exceeds the limit of " + std::to_string(max));
  }
  need(size, what);
  std::string text(data_.substr(0, size));
  data_.remove_prefix(size);
  if (text.find('\0') != std::string::npos) {
    throw ProtocolError(std::string("agent protocol: ") + what + " contains a NUL byte");
  }
  return text;
}

std::vector<std::string> WireReader::list(const char* what, std::size_t& budget) {
  const std::uint32_t count = u32(what);
  // Each entry takes at least 4 bytes: a count beyond that is a lie, refused before reserving.
  if (count > budget || count > data_.size() / 4) {
    throw ProtocolError("agent protocol: " + std::to_string(count) + " " + what +
                        " entries exceed the limit or the frame");
  }
  budget -= count;
  std::vector<std::string> out;
  out.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) out.push_back(string(what));
  return out;
}

void WireReader::finish(const char* frame) const {
  if (!data_.empty()) {
    throw ProtocolError("agent protocol: " + std::to_string(data_.size()) +
                        " unexpected bytes at the end of a " + frame + " frame");
  }
}

}  // namespace hvdrun::launcher::agent
