// libFuzzer target: what an elastic Horovod worker's PUT /worker_addresses body (untrusted:
// Horovod's rendezvous port takes no credentials) goes through: the base64 and pickle of the
// worker registration, and the pickle reader on the raw bytes. Every node a tree names must
// exist, whatever arrives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launcher/horovod/updates/pickle_reader.h"
#include "launcher/horovod/updates/worker_registration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher::horovod;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string error;
  if (const auto registration = read_worker_registration(input, error)) {
    if (registration->addresses.empty() || registration->key.empty() ||
        registration->addresses.size() > kMaxNotificationAddresses) {
      std::abort();
    }
  }
  if (const auto tree = read_pickle(input, error)) {
    for (const auto& node : tree->nodes) {
      for (const std::size_t item : node.items) {
        if (item >= tree->nodes.size()) std::abort();
      }
    }
    if (tree->root >= tree->nodes.size() || tree->nodes.size() > kMaxPickleNodes) std::abort();
  }
  return 0;
}
