// The node agent protocol's frames: round trips of every kind, and every kind of bad frame
// refused with a ProtocolError; the launcher's reader skips a login banner, within a bound.
#include <gtest/gtest.h>
#include <signal.h>

#include "hvdrun/error.h"
#include "launcher/agent/agent_protocol.h"

namespace hvdrun::launcher::agent {
namespace {

SpawnFrame sample() {
  return {42,
          {"/srv/dir with space",
           {"A=1", "EMPTY=", "MULTI=line1\nline2", "Q='\"$x`"},
           {"/bin/sh", "-c", "echo $A", ""}}};
}

template <class Frame>
Frame round_trip(const Frame& frame) {
  using Side = std::conditional_t<std::is_constructible_v<ToAgent, Frame>, ToAgent, FromAgent>;
  FrameReader<Side> reader;
  reader.feed(encode(Side(frame)));
  auto decoded = reader.next();
  EXPECT_TRUE(decoded.has_value());
  EXPECT_EQ(reader.buffered(), 0u);
  return std::get<Frame>(*decoded);
}

TEST(AgentProtocol, EveryFrameRoundTrips) {
  EXPECT_EQ(round_trip(sample()), sample());
  EXPECT_EQ(round_trip(SignalFrame{-1, SIGUSR1}), (SignalFrame{-1, SIGUSR1}));
  EXPECT_EQ(round_trip(CreditFrame{123456}), CreditFrame{123456});
  EXPECT_EQ(round_trip(HelloFrame{1, "node-7", 4242, "n7"}), (HelloFrame{1, "node-7", 4242, "n7"}));
  EXPECT_EQ(round_trip(StartedFrame{3, 999}), (StartedFrame{3, 999}));
  const OutputFrame output{5, StreamKind::kStderr, std::string("a\0b\n", 4)};
  EXPECT_EQ(round_trip(output), output);
  for (const auto& end :
       {ProcessEnd::exited(0), ProcessEnd::exited(255), ProcessEnd::signaled(SIGKILL),
        ProcessEnd::failed_to_start("cannot change to ...")}) {
    const ExitFrame exit{9, end, true};
    EXPECT_EQ(round_trip(exit), exit);
  }
  EXPECT_EQ(round_trip(OutputClosedFrame{11}), OutputClosedFrame{11});
  EXPECT_EQ(round_trip(HeartbeatFrame{}), HeartbeatFrame{});
  EXPECT_EQ(round_trip(StacksRequestFrame{}), StacksRequestFrame{});
  EXPECT_EQ(round_trip(JobEndFrame{3}), JobEndFrame{3});
  EXPECT_EQ(round_trip(JobEndFrame{0, true}), (JobEndFrame{0, true}));
  const StacksFrame stacks{4, 777, "  File \"x.py\", line 3 in f\n", "TID 777:\n#0 main\n",
                           "no native frames: eu-stack not found"};
  EXPECT_EQ(round_trip(stacks), stacks);
  // A NUL in a dump cannot travel in a string: it arrives as '?'.
  const auto nul = round_trip(StacksFrame{1, 2, std::string("a\0b", 3), "", ""});
  EXPECT_EQ(nul.python, "a?b");
}

TEST(AgentProtocol, FramesArriveInPiecesAndBackToBack) {
  std::string bytes = encode(ToAgent(sample())) + encode(ToAgent(CreditFrame{7}));
  FrameReader<ToAgent> reader;
  std::vector<ToAgent> frames;
  for (const char c : bytes) {
    reader.feed(std::string_view(&c, 1));
    while (auto frame = reader.next()) frames.push_back(*frame);
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(std::get<SpawnFrame>(frames[0]), sample());
  EXPECT_EQ(std::get<CreditFrame>(frames[1]).bytes, 7u);
}

TEST(AgentProtocol, LargeEnvironmentRoundTrips) {
  SpawnFrame frame = sample();
  frame.spec.env.push_back("BIG=" + std::string(4 << 20, 'x'));  // far beyond ARG_MAX per string
  for (int i = 0; i < 5000; ++i) frame.spec.env.push_back("V" + std::to_string(i) + "=value");
  EXPECT_EQ(round_trip(frame), frame);
}

TEST(AgentProtocol, EveryTruncationWaitsAndNoneDecodesEarly) {
  const std::string bytes = encode(ToAgent(sample()));
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    FrameReader<ToAgent> reader;
    reader.feed(std::string_view(bytes).substr(0, size));
    EXPECT_FALSE(reader.next().has_value()) << "size " << size;
  }
}

// A body cut short but announced as complete: every field's truncation is named.
TEST(AgentProtocol, ShortBodiesAreRefused) {
  const std::string bytes = encode(ToAgent(sample()));
  for (std::size_t body = 1; body + 4 < bytes.size(); ++body) {
    std::string frame = bytes.substr(0, 4 + body);
    frame[0] = static_cast<char>(body & 0xff);
    frame[1] = static_cast<char>((body >> 8) & 0xff);
    frame[2] = frame[3] = 0;
    FrameReader<ToAgent> reader;
    reader.feed(frame);
    EXPECT_THROW(reader.next(), ProtocolError) << "body " << body;
  }
}

TEST(AgentProtocol, OversizedAndEmptyFramesAreRefusedBeforeReading) {
  for (const std::string& header : {std::string("\xff\xff\xff\x7f", 4), std::string(4, '\0')}) {
    FrameReader<FromAgent> reader;
    reader.feed(header);
    EXPECT_THROW(reader.next(), ProtocolError);
  }
  SpawnFrame huge = sample();
  huge.spec.env.push_back("BIG=" + std::string(kMaxFrameBytes, 'x'));
  EXPECT_THROW(encode(ToAgent(huge)), ProtocolError);
}

ProtocolError decode_error(const std::string& body) {
  std::string frame;
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((body.size() >> (8 * i)) & 0xff));
  frame += body;
  FrameReader<ToAgent> reader;
  reader.feed(frame);
  try {
    reader.next();
  } catch (const ProtocolError& e) {
    return e;
  }
  ADD_FAILURE() << "decoded";
  return ProtocolError("");
}

TEST(AgentProtocol, BadFieldsAreNamed) {
  EXPECT_STREQ(decode_error(std::string("\x63", 1)).what(),
               "agent protocol: unknown frame type 99 from the launcher");
  // A signal the agent does not deliver.
  EXPECT_STREQ(decode_error(std::string("\x02\xff\xff\xff\xff\x0b\x00\x00\x00", 9)).what(),
               "agent protocol: signal 11 is not one the agent delivers");
  // Trailing bytes after a credit.
  EXPECT_STREQ(decode_error(std::string("\x03\x01\x00\x00\x00\x00", 6)).what(),
               "agent protocol: 1 unexpected bytes at the end of a credit frame");
  // A job end whose `again` is neither 0 nor 1.
  EXPECT_STREQ(decode_error(std::string("\x05\x00\x00\x00\x00\x02", 6)).what(),
               "agent protocol: job end 'again' 2");
  // A count of a billion environment entries in a small frame: refused before reserving.
  std::string lying("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xca\x9a\x3b", 13);
  EXPECT_NE(std::string(decode_error(lying).what()).find("entries exceed the limit"),
            std::string::npos);
}

TEST(AgentProtocol, SpawnsWithBadEntriesAreRefused) {
  SpawnFrame no_argv = sample();
  no_argv.spec.argv.clear();
  FrameReader<ToAgent> reader;
  reader.feed(encode(ToAgent(no_argv)));
  EXPECT_THROW(reader.next(), ProtocolError);
  SpawnFrame bad_env = sample();
  bad_env.spec.env.push_back("=novalue");
  FrameReader<ToAgent> reader2;
  reader2.feed(encode(ToAgent(bad_env)));
  EXPECT_THROW(reader2.next(), ProtocolError);
  SpawnFrame nul = sample();
  nul.spec.argv.push_back(std::string("a\0b", 3));
  EXPECT_THROW(encode(ToAgent(nul)), ProtocolError);
}

TEST(AgentProtocol, SignalsTheAgentDelivers) {
  for (const int signo : {SIGTERM, SIGKILL, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT}) {
    EXPECT_TRUE(agent_signal_allowed(signo)) << signo;
  }
  for (const int signo : {0, SIGSTOP, SIGSEGV, SIGCHLD, 64, -1}) {
    EXPECT_FALSE(agent_signal_allowed(signo)) << signo;
  }
}

TEST(AgentStream, SkipsALoginBannerBeforeThePreamble) {
  AgentStreamReader reader;
  reader.feed("Welcome to node7\nLast login: never\n");
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_FALSE(reader.synced());
  const std::string stream =
      std::string(kAgentPreamble) + encode(FromAgent(HelloFrame{1, "node7", 12, ""}));
  reader.feed(stream.substr(0, 7));
  reader.feed(stream.substr(7));
  const auto frame = reader.next();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(std::get<HelloFrame>(*frame).host, "node7");
  EXPECT_EQ(reader.skipped(), "Welcome to node7\nLast login: never\n");
}

TEST(AgentStream, EndlessBannerIsRefusedAfterTheBound) {
  AgentStreamReader reader;
  const std::string chunk(4096, 'b');
  EXPECT_THROW(
      {
        for (std::size_t i = 0; i < kMaxPreambleSkip / chunk.size() + 2; ++i) reader.feed(chunk);
      },
      ProtocolError);
}

}  // namespace
}  // namespace hvdrun::launcher::agent
