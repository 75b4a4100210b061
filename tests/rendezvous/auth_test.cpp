// HMAC challenge: determinism, separation by secret / context / nonce, secret format.
#include "rendezvous/auth.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>

namespace hvdrun::rdzv {
namespace {

TEST(Auth, MacIsDeterministic) {
  const auto nonce = NonceSource().next();
  EXPECT_EQ(compute_mac("secret", "rdzv", nonce), compute_mac("secret", "rdzv", nonce));
  EXPECT_TRUE(
      mac_equal(compute_mac("secret", "rdzv", nonce), compute_mac("secret", "rdzv", nonce)));
}

TEST(Auth, MacMatchesKnownHmacSha256) {
  // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
  const std::string data = " for nothing?";
  std::vector<std::uint8_t> nonce(data.begin(), data.end());
  const auto mac = compute_mac("Jefe", "what do ya want", nonce);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (auto b : mac) hex += {kHex[b >> 4], kHex[b & 15]};
  EXPECT_EQ(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Auth, SecretContextAndNonceAllMatter) {
  const auto nonce = NonceSource().next();
  auto other_nonce = nonce;
  other_nonce[0] ^= 1;
  const auto base = compute_mac("secret", "rdzv", nonce);
  EXPECT_FALSE(mac_equal(base, compute_mac("secret2", "rdzv", nonce)));
  EXPECT_FALSE(mac_equal(base, compute_mac("secret", "data", nonce)));
  EXPECT_FALSE(mac_equal(base, compute_mac("secret", "rdzv", other_nonce)));
  EXPECT_FALSE(mac_equal(base, compute_mac("", "rdzv", nonce)));
}

TEST(Auth, MacEqualComparesLengthAndBytes) {
  std::array<std::uint8_t, 4> a{1, 2, 3, 4}, b{1, 2, 3, 5};
  EXPECT_TRUE(mac_equal(a, a));
  EXPECT_FALSE(mac_equal(a, b));
  EXPECT_FALSE(mac_equal(std::span(a).first(3), a));
}

TEST(Auth, SecretIs64LowercaseHexAndFresh) {
  const auto s1 = make_secret(), s2 = make_secret();
  ASSERT_EQ(s1.size(), 64u);
  for (char c : s1) EXPECT_TRUE(std::isdigit(c) || (c >= 'a' && c <= 'f')) << c;
  EXPECT_NE(s1, s2);
}

TEST(Auth, NoncesAreDistinctAcrossDrawsAndSources) {
  // Three draws of one source and the first of another: a pool that was not refilled, or
  // refilled with the same bytes, repeats nonces.
  NonceSource source, other;
  std::set<std::array<std::uint8_t, kNonceSize>> seen;
  const std::size_t n = 3 * NonceSource::kNoncesPerDraw;
  for (std::size_t i = 0; i < n; ++i) seen.insert(source.next());
  seen.insert(other.next());
  EXPECT_EQ(seen.size(), n + 1);
  EXPECT_EQ(seen.count(std::array<std::uint8_t, kNonceSize>{}), 0u);
}

}  // namespace
}  // namespace hvdrun::rdzv
