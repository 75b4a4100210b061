// Endpoint::parse of rendezvous addresses.
#include <gtest/gtest.h>

#include "hvdrun/error.h"
#include "rendezvous/client.h"

namespace hvdrun::rdzv {
namespace {

TEST(Endpoint, ParsesHostPortAndBracketedV6) {
  auto e = Endpoint::parse("127.0.0.1:4567");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 4567);
  e = Endpoint::parse("node-1.example:65535");
  EXPECT_EQ(e.host, "node-1.example");
  EXPECT_EQ(e.port, 65535);
  e = Endpoint::parse("[::1]:80");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 80);
}

TEST(Endpoint, BadTextIsAUsageErrorNamingIt) {
  for (const char* text : {"", "host", "host:", ":80", "host:0", "host:65536", "host:8x", "::1:80",
                           "[::1]80", "[::1", "[]:80"}) {
    try {
      Endpoint::parse(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + std::string(text) + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace hvdrun::rdzv
