// The remote agent's stdin codec: round trips, and every kind of bad frame refused.
#include <gtest/gtest.h>
#include <signal.h>

#include "hvdrun/error.h"
#include "launcher/agent/remote_agent.h"

namespace hvdrun::launcher::ssh {
namespace {

AgentSpec sample() {
  return {"/srv/dir with space",
          {"A=1", "EMPTY=", "MULTI=line1\nline2", "Q='\"$x`"},
          {"/bin/sh", "-c", "echo $A", ""}};
}

TEST(AgentCodec, RoundTrip) {
  const AgentSpec spec = sample();
  EXPECT_EQ(decode_agent_spec(encode_agent_spec(spec)), spec);
}

TEST(AgentCodec, LargeEnvironmentValueRoundTrips) {
  AgentSpec spec = sample();
  spec.env.push_back("BIG=" + std::string(4 << 20, 'x'));  // far beyond ARG_MAX per string
  for (int i = 0; i < 5000; ++i) spec.env.push_back("V" + std::to_string(i) + "=value");
  EXPECT_EQ(decode_agent_spec(encode_agent_spec(spec)), spec);
}

TEST(AgentCodec, HeaderAnnouncesPayloadSize) {
  const std::string frame = encode_agent_spec(sample());
  EXPECT_EQ(decode_agent_header(frame.substr(0, kAgentHeaderSize)),
            frame.size() - kAgentHeaderSize);
}

TEST(AgentCodec, EveryTruncationIsRefused) {
  const std::string frame = encode_agent_spec(sample());
  for (std::size_t size = 0; size < frame.size(); ++size) {
    EXPECT_THROW(decode_agent_spec(frame.substr(0, size)), ProtocolError) << "size " << size;
  }
  const std::string payload = frame.substr(kAgentHeaderSize);
  for (std::size_t size = 0; size < payload.size(); ++size) {
    EXPECT_THROW(decode_agent_payload(payload.substr(0, size)), ProtocolError) << size;
  }
}

TEST(AgentCodec, TrailingBytesAreRefused) {
  const std::string payload = encode_agent_spec(sample()).substr(kAgentHeaderSize);
  EXPECT_THROW(decode_agent_payload(payload + "x"), ProtocolError);
}

TEST(AgentCodec, OversizedHeaderIsRefusedBeforeReading) {
  std::string frame = encode_agent_spec(sample());
  frame[8] = frame[9] = frame[10] = frame[11] = '\xff';
  try {
    decode_agent_header(frame);
    FAIL() << "no error";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
}

TEST(AgentCodec, BadMagicAndVersionAreNamed) {
  std::string frame = encode_agent_spec(sample());
  std::string bad_magic = frame;
  bad_magic[0] = 'X';
  EXPECT_THROW(decode_agent_spec(bad_magic), ProtocolError);
  std::string bad_version = frame;
  bad_version[4] = 9;
  try {
    decode_agent_spec(bad_version);
    FAIL() << "no error";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("version 9"), std::string::npos) << e.what();
  }
}

// Found by fuzz/agent_codec.cpp: a frame with a non-zero reserved field decoded, so one spec
// had several frames.
TEST(AgentCodec, NonZeroReservedFieldIsRefused) {
  std::string frame = encode_agent_spec(sample());
  frame[7] = 1;
  try {
    decode_agent_spec(frame);
    FAIL() << "no error";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("reserved header field is 256, expected 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(AgentCodec, LyingCountIsRefusedWithoutAllocating) {
  // cwd "", then an environment count of 2^32-1 with nothing behind it.
  std::string payload(4, '\0');
  payload += std::string(4, '\xff');
  EXPECT_THROW(decode_agent_payload(payload), ProtocolError);
}

TEST(AgentCodec, BadEntriesAreRefused) {
  AgentSpec no_argv = sample();
  no_argv.argv.clear();
  EXPECT_THROW(decode_agent_spec(encode_agent_spec(no_argv)), ProtocolError);
  AgentSpec no_equals = sample();
  no_equals.env.push_back("NOEQUALS");
  EXPECT_THROW(decode_agent_spec(encode_agent_spec(no_equals)), ProtocolError);
  AgentSpec nul = sample();
  nul.argv.push_back(std::string("a\0b", 3));
  EXPECT_THROW(encode_agent_spec(nul), ProtocolError);
}

TEST(AgentCodec, ControlMessages) {
  for (const auto control : {AgentControl::kTerm, AgentControl::kKill, AgentControl::kInt}) {
    const auto token = encode_agent_control(control);
    EXPECT_EQ(token.size(), kAgentControlSize);
    EXPECT_EQ(decode_agent_control(token), control);
  }
  EXPECT_EQ(decode_agent_control("STOP"), std::nullopt);
  EXPECT_EQ(agent_control_for_signal(SIGTERM), AgentControl::kTerm);
  EXPECT_EQ(agent_control_for_signal(SIGKILL), AgentControl::kKill);
  EXPECT_EQ(agent_control_for_signal(SIGINT), AgentControl::kInt);
  EXPECT_EQ(agent_control_for_signal(SIGUSR1), std::nullopt);
}

}  // namespace
}  // namespace hvdrun::launcher::ssh
