// Job secret and the HMAC-SHA256 challenge that proves a peer knows it (OpenSSL).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rendezvous/protocol.h"

namespace hvdrun::rdzv {

// A fresh random secret as 64 hex characters (32 bytes from the OS CSPRNG).
std::string make_secret();
// Fresh random challenge nonces, drawn from OpenSSL's CSPRNG kNoncesPerDraw at a time: a
// server challenges every connection, and one RAND_bytes call costs about as much as a small
// system call (it checks for a fork each time). One thread at a time; not for use across
// fork().
class NonceSource {
 public:
  static constexpr std::size_t kNoncesPerDraw = 64;

  NonceSource() = default;
  NonceSource(const NonceSource&) = delete;
  NonceSource& operator=(const NonceSource&) = delete;
  ~NonceSource();

  // Throws Error if the CSPRNG fails.
  std::array<std::uint8_t, kNonceSize> next();

 private:
  std::array<std::uint8_t, kNonceSize * kNoncesPerDraw> pool_{};
  std::size_t used_ = pool_.size();
};
// The context of the MAC that admits a connection to the rendezvous server.
inline constexpr std::string_view kRendezvousAuthContext = "rdzv";
// HMAC-SHA256(secret, context || nonce). `context` separates uses (rendezvous, data plane).
std::array<std::uint8_t, kMacSize> compute_mac(std::string_view secret, std::string_view context,
                                               std::span<const std::uint8_t> nonce);
// Constant-time comparison.
bool mac_equal(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) noexcept;

}  // namespace hvdrun::rdzv
