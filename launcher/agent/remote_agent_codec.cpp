// Codec of the remote agent's stdin: the bounded spec frame and the 4-byte control messages.
#include <signal.h>

#include <cstring>

#include "hvdrun/error.h"
#include "launcher/agent/remote_agent.h"

namespace hvdrun::launcher::ssh {
namespace {

constexpr char kMagic[4] = {'H', 'V', 'D', 'A'};

void put_u32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_u16(std::string& out, std::uint16_t value) {
  out.push_back(static_cast<char>(value & 0xff));
  out.push_back(static_cast<char>(value >> 8));
}

void put_string(std::string& out, const std::string& text, const char* what) {
  if (text.find('\0') != std::string::npos) {
    throw ProtocolError(std::string("remote agent spec: ") + what + " contains a NUL byte");
  }
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

void put_list(std::string& out, const std::vector<std::string>& list, const char* what) {
  put_u32(out, static_cast<std::uint32_t>(list.size()));
  for (const auto& item : list) put_string(out, item, what);
}

// Reads the payload front to back; every read is bounds-checked against what is left.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  std::uint32_t u32(const char* what) {
    need(4, what);
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      value |= static_cast<std::uint32_t>(static_cast<unsigned char>(data_[i])) << (8 * i);
    }
    data_.remove_prefix(4);
    return value;
  }

  std::string string(const char* what) {
    const std::uint32_t size = u32(what);
    need(size, what);
    std::string text(data_.substr(0, size));
    data_.remove_prefix(size);
    if (text.find('\0') != std::string::npos) {
      throw ProtocolError(std::string("remote agent spec: ") + what + " contains a NUL byte");
    }
    return text;
  }

  std::vector<std::string> list(const char* what, std::size_t& budget) {
    const std::uint32_t count = u32(what);
    // Each entry takes at least 4 bytes: a count beyond that is a lie, refused before reserving.
    if (count > budget || count > data_.size() / 4) {
      throw ProtocolError("remote agent spec: " + std::to_string(count) + " " + what +
                          " entries exceed the limit or the frame");
    }
    budget -= count;
    std::vector<std::string> out;
    out.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) out.push_back(string(what));
    return out;
  }

  std::size_t left() const { return data_.size(); }

 private:
  void need(std::size_t size, const char* what) const {
    if (size > data_.size()) {
      throw ProtocolError(std::string("remote agent spec truncated in ") + what + ": needs " +
                          std::to_string(size) + " bytes, " + std::to_string(data_.size()) +
                          " left");
    }
  }
  std::string_view data_;
};

void check_env_entry(const std::string& entry) {
  const auto eq = entry.find('=');
  if (eq == 0 || eq == std::string::npos) {
    throw ProtocolError("remote agent spec: environment entry without NAME=: '" +
                        entry.substr(0, 64) + "'");
  }
}

}  // namespace

std::string encode_agent_spec(const AgentSpec& spec) {
  if (spec.env.size() + spec.argv.size() > kAgentMaxStrings) {
    throw ProtocolError("remote agent spec: " + std::to_string(spec.env.size() + spec.argv.size()) +
                        " strings exceed the limit of " + std::to_string(kAgentMaxStrings));
  }
  std::string payload;
  put_string(payload, spec.cwd, "working directory");
  put_list(payload, spec.env, "environment");
  put_list(payload, spec.argv, "argv");
  if (payload.size() > kAgentSpecMaxBytes) {
    throw ProtocolError("remote agent spec of " + std::to_string(payload.size()) +
                        " bytes exceeds the limit of " + std::to_string(kAgentSpecMaxBytes) +
                        " (environment or arguments too large)");
  }
  std::string frame(kMagic, sizeof kMagic);
  put_u16(frame, kAgentProtocolVersion);
  put_u16(frame, 0);
  put_u32(frame, static_cast<std::uint32_t>(payload.size()));
  return frame + payload;
}

std::size_t decode_agent_header(std::string_view header) {
  if (header.size() < kAgentHeaderSize) {
    throw ProtocolError("remote agent spec header truncated: " + std::to_string(header.size()) +
                        " of " + std::to_string(kAgentHeaderSize) + " bytes");
  }
  if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
    throw ProtocolError("remote agent spec: bad magic (not an hvdrun launcher on the other end)");
  }
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(header[i]); };
  const unsigned version = byte(4) | (byte(5) << 8);
  if (version != kAgentProtocolVersion) {
    throw ProtocolError("remote agent spec version " + std::to_string(version) + ", expected " +
                        std::to_string(kAgentProtocolVersion) +
                        " (different hvdrun versions on launcher and host?)");
  }
  if (const unsigned reserved = byte(6) | (byte(7) << 8); reserved != 0) {
    throw ProtocolError("remote agent spec: reserved header field is " + std::to_string(reserved) +
                        ", expected 0");
  }
  const std::size_t size = static_cast<std::size_t>(byte(8)) | (std::size_t{byte(9)} << 8) |
                           (std::size_t{byte(10)} << 16) | (std::size_t{byte(11)} << 24);
  if (size > kAgentSpecMaxBytes) {
    throw ProtocolError("remote agent spec of " + std::to_string(size) +
                        " bytes exceeds the limit of " + std::to_string(kAgentSpecMaxBytes));
  }
  return size;
}

AgentSpec decode_agent_payload(std::string_view payload) {
  Reader reader(payload);
  std::size_t budget = kAgentMaxStrings;
  AgentSpec spec;
  spec.cwd = reader.string("working directory");
  spec.env = reader.list("environment", budget);
  spec.argv = reader.list("argv", budget);
  if (reader.left() != 0) {
    throw ProtocolError("remote agent spec: " + std::to_string(reader.left()) +
                        " unexpected bytes after argv");
  }
  if (spec.argv.empty()) throw ProtocolError("remote agent spec: empty argv");
  for (const auto& entry : spec.env) check_env_entry(entry);
  return spec;
}

AgentSpec decode_agent_spec(std::string_view frame) {
  const std::size_t size = decode_agent_header(frame);
  if (frame.size() != kAgentHeaderSize + size) {
    throw ProtocolError("remote agent spec frame of " + std::to_string(frame.size()) +
                        " bytes, header announces " + std::to_string(kAgentHeaderSize + size));
  }
  return decode_agent_payload(frame.substr(kAgentHeaderSize));
}

std::string_view encode_agent_control(AgentControl control) {
  switch (control) {
    case AgentControl::kTerm:
      return "TERM";
    case AgentControl::kKill:
      return "KILL";
    case AgentControl::kInt:
      return "INT ";
  }
  return "TERM";
}

std::optional<AgentControl> decode_agent_control(std::string_view token) {
  for (const auto control : {AgentControl::kTerm, AgentControl::kKill, AgentControl::kInt}) {
    if (token == encode_agent_control(control)) return control;
  }
  return std::nullopt;
}

std::optional<AgentControl> agent_control_for_signal(int signo) {
  switch (signo) {
    case SIGTERM:
      return AgentControl::kTerm;
    case SIGKILL:
      return AgentControl::kKill;
    case SIGINT:
      return AgentControl::kInt;
    default:
      return std::nullopt;
  }
}

}  // namespace hvdrun::launcher::ssh
