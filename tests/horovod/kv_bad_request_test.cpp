// Bad requests: each gets its status (or a close) on its own connection only, and the
// server keeps serving other clients afterwards.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <thread>

#include "tests/horovod/horovod_http_client.h"
#include "tests/horovod/kv_server_thread.h"

namespace hvdrun::launcher::horovod::test {
namespace {

constexpr std::chrono::milliseconds kRequestTimeout{300};

class KvBadRequest : public ::testing::Test {
 protected:
  static KvServerOptions options() {
    KvServerOptions o;
    o.max_body_bytes = 1024;
    o.max_header_bytes = 1024;
    o.request_timeout = kRequestTimeout;
    return o;
  }

  void SetUp() override {
    ASSERT_EQ(http_request(server_.port(), "PUT", "/probe/key", "alive").status, 200);
  }
  // A normal client is still served.
  void expect_serving() {
    const auto r = http_request(server_.port(), "GET", "/probe/key");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "alive");
  }
  void expect_status(const HttpResponse& r, int status) {
    EXPECT_EQ(r.status, status) << r.head;
    EXPECT_EQ(r.content_length, 0u) << r.head;
    EXPECT_TRUE(r.closed_after);
    EXPECT_EQ(r.error, 0) << std::strerror(r.error);
    expect_serving();
  }

  LogCapture log_;
  KvServerThread server_{options()};
};

TEST_F(KvBadRequest, AnUnknownMethodGets400) {
  expect_status(http_request(server_.port(), "POST", "/probe/key", "x"), 400);
  expect_status(http_request(server_.port(), "HEAD", "/probe/key"), 400);
  expect_status(http_request(server_.port(), "BREW", "/probe/key"), 400);
  EXPECT_GE(log_.count("bad request"), 1u) << log_.all();
  EXPECT_NE(log_.all().find("method POST"), std::string::npos) << log_.all();
  EXPECT_EQ(server_.stats().bad_requests, 3u);
}

TEST_F(KvBadRequest, APathWithoutExactlyScopeAndKeyGets400) {
  for (const char* path : {"/probe", "/probe/key/extra", "//key", "/probe/", "/"}) {
    SCOPED_TRACE(path);
    expect_status(http_request(server_.port(), "GET", path), 400);
  }
  expect_status(http_request(server_.port(), "PUT", "/a/b/c", "x"), 400);
  expect_status(http_request(server_.port(), "DELETE", "/probe"), 400);
  EXPECT_EQ(http_request(server_.port(), "GET", "/probe/key").body, "alive");
}

TEST_F(KvBadRequest, GarbageBytesGet400) {
  expect_status(raw_exchange(server_.port(), std::string("\x01\x02\xff garbage\r\n\r\n", 16)), 400);
  expect_status(raw_exchange(server_.port(), "GET /a/b HTTP/9.9\r\n\r\n"), 400);
  expect_status(raw_exchange(server_.port(), "PUT /a/b HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
                400);
}

TEST_F(KvBadRequest, AnOversizedHeaderGets431) {
  const std::string request =
      "GET /probe/key HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + std::string(2000, 'p') +
      "\r\nContent-Length: 0\r\n\r\n";
  expect_status(raw_exchange(server_.port(), request), 431);
  EXPECT_EQ(log_.count("max_header_bytes=1024"), 1u) << log_.all();
  EXPECT_EQ(server_.stats().refused_header, 1u);
}

TEST_F(KvBadRequest, ADeclaredBodyOverTheCapGets413) {
  // The whole body is sent too: the reply must still arrive, not a reset.
  expect_status(http_request(server_.port(), "PUT", "/probe/big", std::string(4096, 'b')), 413);
  // Headers alone, announcing a huge body.
  expect_status(
      raw_exchange(server_.port(), "PUT /probe/big HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n"),
      413);
  EXPECT_EQ(log_.count("max_body_bytes=1024"), 1u) << log_.all();
  EXPECT_EQ(server_.stats().refused_body, 2u);
  EXPECT_EQ(http_request(server_.port(), "GET", "/probe/big").status, 404);
  // Exactly at the cap is fine.
  EXPECT_EQ(http_request(server_.port(), "PUT", "/probe/big", std::string(1024, 'b')).status, 200);
}

TEST_F(KvBadRequest, AClientThatSendsNothingIsClosedByTheDeadline) {
  RawConnection idle(server_.port());
  const auto closed = idle.wait_closed(5s);
  ASSERT_TRUE(closed);
  EXPECT_GE(*closed, kRequestTimeout - std::chrono::milliseconds(50));
  EXPECT_LT(*closed, 4 * kRequestTimeout);
  expect_serving();
  EXPECT_EQ(log_.count("request_timeout=300 ms"), 1u) << log_.all();
  EXPECT_EQ(server_.stats().timeouts, 1u);
}

TEST_F(KvBadRequest, AnUnfinishedRequestIsClosedByTheDeadline) {
  RawConnection header_only(server_.port());
  header_only.send("GET /probe/key HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  RawConnection short_body(server_.port());
  short_body.send("PUT /probe/key HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly ten..");
  // The deadline covers the whole request, however slowly it trickles in.
  RawConnection trickle(server_.port());
  try {
    for (const char* part : {"G", "E", "T", " ", "/", "p", "r", "o"}) {
      trickle.send(part);
      std::this_thread::sleep_for(kRequestTimeout / 4);
    }
  } catch (const std::runtime_error&) {  // closed under it: what the deadline is for
  }
  EXPECT_TRUE(header_only.wait_closed(1s));
  EXPECT_TRUE(short_body.wait_closed(1s));
  EXPECT_TRUE(trickle.wait_closed(1s));
  expect_serving();
  EXPECT_EQ(http_request(server_.port(), "GET", "/probe/key").body, "alive");
  EXPECT_EQ(server_.stats().timeouts, 3u);
}

TEST_F(KvBadRequest, AClientThatVanishesMidRequestHarmsNoOne) {
  {
    RawConnection gone(server_.port());
    gone.send("PUT /probe/key HTTP/1.1\r\nContent-Length: 100\r\n\r\npartial");
  }
  {
    RawConnection gone(server_.port());
    gone.send("GE");
  }
  expect_serving();  // accepted after the two vanished ones (accept is in order)
  for (int i = 0; i < 200 && server_.stats().open_connections > 0; ++i) {
    std::this_thread::sleep_for(10ms);  // until the server has seen all of them go
  }
  EXPECT_EQ(server_.stats().open_connections, 0u);
}

TEST_F(KvBadRequest, ManyBadRequestsLogOneLinePerSecond) {
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(http_request(server_.port(), "GET", "/too/many/segments").status, 400);
  }
  EXPECT_LE(log_.count("bad request"), 2u) << log_.all();
  EXPECT_EQ(server_.stats().bad_requests, 50u);
  expect_serving();
  server_.close();  // counts what was held back
  EXPECT_EQ(log_.count("warnings not shown"), 1u) << log_.all();
  EXPECT_EQ(log_.count("about bad requests"), 1u) << log_.all();
}

TEST_F(KvBadRequest, AChunkedBodyIsAccepted) {
  const auto r = raw_exchange(server_.port(),
                              "PUT /probe/chunked HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(http_request(server_.port(), "GET", "/probe/chunked").body, "abcde");
}

}  // namespace
}  // namespace hvdrun::launcher::horovod::test
