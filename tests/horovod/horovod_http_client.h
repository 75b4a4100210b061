// Test clients that speak like Horovod's gloo store client (third_party HTTPRequest.hpp used
// by horovod/common/gloo/http_store.cc): "METHOD /scope/key HTTP/1.1\r\nHost: <addr>\r\n
// Content-Length: <n>\r\n\r\n<body>" on a new TCP connection per request, the status from
// the second token of the first line and the body length from the exact-case
// Content-Length header. Unlike Horovod's, every socket wait here has a timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"

namespace hvdrun::launcher::horovod::test {

using namespace std::chrono_literals;

struct HttpResponse {
  int status = 0;                             // 0: no status line arrived
  std::optional<std::size_t> content_length;  // the exact-case "Content-Length" header
  std::string head;                           // status line and headers as received
  std::string body;
  bool closed_after = false;  // the server closed the connection after the response
  int error = 0;              // errno of a failed connect / send / recv
  bool timed_out = false;
};

// One request on its own connection, as Horovod sends it.
HttpResponse http_request(std::uint16_t port, std::string_view method, std::string_view path,
                          std::string_view body = {}, std::chrono::milliseconds timeout = 5s);

// Sends `bytes` as they are, then reads until the server closes (or `timeout`) and parses
// what came back like http_request does.
HttpResponse raw_exchange(std::uint16_t port, std::string_view bytes,
                          std::chrono::milliseconds timeout = 5s);

// A connection under the test's control, for clients that send little or nothing.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port);  // throws std::runtime_error
  void send(std::string_view bytes);
  // Waits for the server to close; the time it took, or nullopt after `timeout`.
  std::optional<std::chrono::milliseconds> wait_closed(std::chrono::milliseconds timeout);
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
  std::chrono::steady_clock::time_point opened_;
};

// Horovod's HTTPStore on top of http_request: 200 and 404 are final, anything else is tried
// 3 times 500 ms apart; wait() polls every 10 ms. Failures throw std::runtime_error.
class HorovodStore {
 public:
  HorovodStore(std::uint16_t port, std::string scope) : port_(port), scope_(std::move(scope)) {}

  void set(const std::string& key, std::string_view value);
  std::optional<std::string> get(const std::string& key);  // nullopt on 404
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  void finalize(int rank);  // DELETE /<scope>/<rank>

 private:
  HttpResponse perform(std::string_view method, const std::string& key, std::string_view body);

  std::uint16_t port_;
  std::string scope_;
};

}  // namespace hvdrun::launcher::horovod::test
