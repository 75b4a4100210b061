// Job secret and the HMAC-SHA256 challenge that proves a peer knows it (OpenSSL).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rendezvous/protocol.h"

namespace hvdrun::rdzv {

// A fresh random secret as 64 hex characters (32 bytes from the OS CSPRNG).
std::string make_secret();
// A fresh random challenge nonce.
std::array<std::uint8_t, kNonceSize> make_nonce();
// HMAC-SHA256(secret, context || nonce). `context` separates uses (rendezvous, data plane).
std::array<std::uint8_t, kMacSize> compute_mac(std::string_view secret, std::string_view context,
                                               std::span<const std::uint8_t> nonce);
// Constant-time comparison.
bool mac_equal(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) noexcept;

}  // namespace hvdrun::rdzv
