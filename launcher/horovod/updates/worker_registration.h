// WorkerRegistration: what an elastic Horovod worker stores under
// PUT /worker_addresses/<host>:<local_rank> when it enters hvd.elastic.run: the addresses of its
// notification service ({interface: [(ip, port), ...]}) and the key that signs the messages to
// it, as base64 of a pickled 2-tuple. The body is untrusted: decoded by the bounded
// pickle_reader, and only a tuple of exactly that shape is taken.
// Thread: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher::horovod {

struct NotificationAddress {
  std::string interface;
  std::string ip;  // an IPv4 address, as the worker advertises it
  std::uint16_t port = 0;
};

struct WorkerRegistration {
  std::vector<NotificationAddress> addresses;  // in the order the worker listed them
  std::string key;                             // the HMAC-SHA256 key (32 bytes from Horovod)
};

// A registration of more addresses is refused (a host has a few interfaces).
inline constexpr std::size_t kMaxNotificationAddresses = 64;

// The registration `body` holds, or nullopt with `error` saying what is wrong.
std::optional<WorkerRegistration> read_worker_registration(std::string_view body,
                                                           std::string& error);

// `text` as base64 decodes (whitespace ignored), or nullopt if it is not base64.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace hvdrun::launcher::horovod
