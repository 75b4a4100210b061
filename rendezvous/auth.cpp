// Job secret, nonces and the HMAC-SHA256 challenge response (OpenSSL 3).
#include "rendezvous/auth.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <vector>

#include "hvdrun/error.h"

namespace hvdrun::rdzv {
namespace {

std::string openssl_error(const char* what) {
  char buf[256] = "unknown error";
  if (unsigned long code = ERR_get_error(); code != 0) ERR_error_string_n(code, buf, sizeof buf);
  return std::string(what) + " failed: " + buf;
}

void random_bytes(std::span<std::uint8_t> out) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) {
    throw Error(openssl_error("RAND_bytes"));
  }
}

}  // namespace

std::string make_secret() {
  std::array<std::uint8_t, 32> bytes{};
  random_bytes(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (auto b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xF]);
  }
  return out;
}

NonceSource::~NonceSource() {
  OPENSSL_cleanse(pool_.data(), pool_.size());  // nonces not handed out yet
}

std::array<std::uint8_t, kNonceSize> NonceSource::next() {
  if (used_ == pool_.size()) {
    random_bytes(pool_);
    used_ = 0;
  }
  std::array<std::uint8_t, kNonceSize> nonce{};
  std::copy_n(pool_.begin() + static_cast<std::ptrdiff_t>(used_), kNonceSize, nonce.begin());
  OPENSSL_cleanse(pool_.data() + used_, kNonceSize);
  used_ += kNonceSize;
  return nonce;
}

std::array<std::uint8_t, kMacSize> compute_mac(std::string_view secret, std::string_view context,
                                               std::span<const std::uint8_t> nonce) {
  std::vector<std::uint8_t> data(context.begin(), context.end());
  data.insert(data.end(), nonce.begin(), nonce.end());
  std::array<std::uint8_t, kMacSize> mac{};
  unsigned int len = 0;
  // A non-null key pointer even for an empty secret (OpenSSL treats null as "reuse key").
  static constexpr std::uint8_t kEmpty = 0;
  const void* key = secret.empty() ? &kEmpty : static_cast<const void*>(secret.data());
  if (HMAC(EVP_sha256(), key, static_cast<int>(secret.size()), data.data(), data.size(), mac.data(),
           &len) == nullptr ||
      len != kMacSize) {
    throw Error(openssl_error("HMAC-SHA256"));
  }
  return mac;
}

bool mac_equal(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) noexcept {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace hvdrun::rdzv
