// The output of a --host-discovery-script (parse_discovery_output): trimmed lines, comments,
// --slots-per-host, repeated lines, and errors naming the script and the line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hvdrun/error.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view text) {
  try {
    parse_discovery_output(text, "./discover.sh", std::nullopt);
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no UsageError for " << text;
  return {};
}

TEST(DiscoveryOutput, ReadsHostsWithAndWithoutSlots) {
  const auto hosts = parse_discovery_output(
      "# the pool\n  node-a:4 \n\nnode-b\r\nadmin@node-c:2 # spare\n"
      "[fe80::1]:3\nnode-a:4\n",
      "./discover.sh", 8);
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0].name, "node-a");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].name, "node-b");
  EXPECT_EQ(hosts[1].slots, 8);  // --slots-per-host
  EXPECT_EQ(hosts[2].user, "admin");
  EXPECT_EQ(hosts[2].slots, 2);
  EXPECT_EQ(hosts[3].name, "fe80::1");
  EXPECT_EQ(hosts[3].origin, "discovery script './discover.sh' line 6");
  EXPECT_EQ(parse_discovery_output("solo\n", "s", std::nullopt).at(0).slots, 1);
}

TEST(DiscoveryOutput, NoHostIsAValidAnswer) {
  EXPECT_TRUE(parse_discovery_output("", "s", std::nullopt).empty());
  EXPECT_TRUE(parse_discovery_output("# none\n\n", "s", std::nullopt).empty());
}

TEST(DiscoveryOutput, GarbageIsNamedByLine) {
  EXPECT_EQ(error_of("node-a:2\nnode-b:x\n"),
            "discovery script './discover.sh' line 2: bad slot count 'x' in 'node-b:x'");
  EXPECT_THAT(error_of("node-a slots=2\n"), HasSubstr("line 1: expected host or host:slots"));
  EXPECT_THAT(error_of("\nnode-a:0\n"), HasSubstr("line 2: bad slot count '0'"));
  EXPECT_THAT(error_of("node-a:2\nnode-a:3\n"),
              HasSubstr("line 2: host 'node-a' listed twice (first at discovery script "
                        "'./discover.sh' line 1)"));
  EXPECT_THAT(error_of("bad\x01name\n"), HasSubstr("line 1: bad host name 'bad\\x01name'"));
}

// A 1 MiB line is named by its line and its first bytes, not echoed whole.
TEST(DiscoveryOutput, AHugeBadLineIsCutInTheMessage) {
  const std::string line(1 << 20, 'x');
  const std::string error = error_of("node-a:2\n" + line + ":y\n");
  EXPECT_LT(error.size(), 1000u) << error.size();
  EXPECT_THAT(error, HasSubstr("line 2: "));
  EXPECT_THAT(error, HasSubstr("xxx...' (1048578 bytes)"));
}

}  // namespace
}  // namespace hvdrun::launcher
