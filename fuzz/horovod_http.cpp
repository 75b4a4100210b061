// libFuzzer target: what Horovod's HTTP rendezvous does with a request from the network
// (launcher/horovod): Beast's request parser with the server's header and body limits, the
// path parser, and the scope store under the verbs the server maps (PUT stores, GET reads,
// DELETE removes). Store limits must hold whatever arrives.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/horovod/kv_scopes.h"

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hvdrun::launcher::horovod;
  http::request_parser<http::string_body> parser;
  parser.header_limit(8 * 1024);
  parser.body_limit(64 * 1024);
  boost::system::error_code ec;
  std::size_t used = 0;
  while (used < size && !parser.is_done()) {
    const std::size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
    if (ec == http::error::need_more) break;
    if (ec) return 0;
    if (n == 0) break;
    used += n;
  }
  if (!parser.is_done()) return 0;
  auto request = parser.release();
  const auto path = parse_kv_path(request.target());
  if (!path) return 0;
  static constexpr std::size_t kCap = 1 << 20;
  KvScopes scopes(KvPlan{}, kCap);
  switch (request.method()) {
    case http::verb::put:
      (void)scopes.put(path->scope, path->key, request.body());
      (void)scopes.get(path->scope, path->key);
      break;
    case http::verb::delete_:
      (void)scopes.remove(path->scope, path->key);
      break;
    default:
      (void)scopes.get(path->scope, path->key);
      break;
  }
  if (scopes.stored_bytes() > kCap) __builtin_trap();  // the cap was passed
  return 0;
}
