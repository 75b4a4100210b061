// read_worker_registration (worker_registration.h).
#include "launcher/horovod/updates/worker_registration.h"

#include <openssl/evp.h>

#include <boost/asio/ip/address_v4.hpp>

#include "launcher/horovod/updates/pickle_reader.h"

namespace hvdrun::launcher::horovod {
namespace {

using Kind = PickleNode::Kind;

bool is(const PickleTree& tree, std::size_t index, Kind kind, std::size_t items) {
  const auto& node = tree.at(index);
  return node.kind == kind && node.items.size() == items;
}

// One (ip, port) pair of `interface`'s list into `out`; false with `error` if it is not one.
bool read_address(const PickleTree& tree, std::size_t index, const std::string& interface,
                  std::vector<NotificationAddress>& out, std::string& error) {
  if (!is(tree, index, Kind::kTuple, 2)) {
    error = "an address of interface '" + interface + "' is not an (ip, port) tuple";
    return false;
  }
  const auto& ip = tree.at(tree.at(index).items[0]);
  const auto& port = tree.at(tree.at(index).items[1]);
  boost::system::error_code ec;
  if (ip.kind != Kind::kText || (boost::asio::ip::make_address_v4(ip.text, ec), ec)) {
    error = "an address of interface '" + interface + "' is not an IPv4 address";
    return false;
  }
  if (port.kind != Kind::kInt || port.number < 1 || port.number > 65535) {
    error = "a port of interface '" + interface + "' is not a number from 1 to 65535";
    return false;
  }
  if (out.size() >= kMaxNotificationAddresses) {
    error = "more than " + std::to_string(kMaxNotificationAddresses) + " addresses";
    return false;
  }
  out.push_back({interface, ip.text, static_cast<std::uint16_t>(port.number)});
  return true;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  std::string compact;
  compact.reserve(text.size());
  for (const char c : text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') compact.push_back(c);
  }
  if (compact.size() % 4 != 0) return std::nullopt;
  std::string out(compact.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t padding = 0;
  if (!compact.empty() && compact.back() == '=') ++padding;
  if (compact.size() > 1 && compact[compact.size() - 2] == '=') ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

std::optional<WorkerRegistration> read_worker_registration(std::string_view body,
                                                           std::string& error) {
  const auto raw = decode_base64(body);
  if (!raw) {
    error = "the body is not base64";
    return std::nullopt;
  }
  std::string pickle_error;
  const auto tree = read_pickle(*raw, pickle_error);
  if (!tree) {
    error = "the body is not a pickle of plain data: " + pickle_error;
    return std::nullopt;
  }
  const auto& root = tree->at(tree->root);
  if (!is(*tree, tree->root, Kind::kTuple, 2) || tree->at(root.items[0]).kind != Kind::kDict ||
      tree->at(root.items[1]).kind != Kind::kBytes) {
    error = "the body is not a pickled ({interface: [(ip, port), ...]}, key) tuple";
    return std::nullopt;
  }
  WorkerRegistration out;
  out.key = tree->at(root.items[1]).text;
  if (out.key.empty()) {
    error = "the key is empty";
    return std::nullopt;
  }
  const auto& interfaces = tree->at(root.items[0]).items;
  for (std::size_t i = 0; i + 1 < interfaces.size(); i += 2) {
    const auto& name = tree->at(interfaces[i]);
    const auto& list = tree->at(interfaces[i + 1]);
    if (name.kind != Kind::kText || list.kind != Kind::kList) {
      error = "an interface is not a name with a list of addresses";
      return std::nullopt;
    }
    for (const std::size_t address : list.items) {
      if (!read_address(*tree, address, name.text, out.addresses, error)) return std::nullopt;
    }
  }
  if (out.addresses.empty()) {
    error = "no address";
    return std::nullopt;
  }
  return out;
}

}  // namespace hvdrun::launcher::horovod
