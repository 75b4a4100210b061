// The KV server over real sockets with Horovod-like requests: PUT/GET/DELETE, the exact
// reply format, the elastic requests of a static job, the stored-bytes and connection
// limits with their log lines, close() and reset().
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "hvdrun/error.h"
#include "launcher/horovod/kv_scopes.h"
#include "tests/horovod/horovod_http_client.h"
#include "tests/horovod/kv_server_thread.h"
#include "tests/support/wait_until.h"

namespace hvdrun::launcher::horovod::test {
namespace {

using Clock = std::chrono::steady_clock;

TEST(KvServer, PutGetDeleteRoundTrip) {
  KvServerThread server;
  std::string blob(1000, '\0');
  for (std::size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 7);

  auto put = http_request(server.port(), "PUT", "/scope/key", blob);
  EXPECT_EQ(put.status, 200);
  EXPECT_EQ(put.content_length, 0u);
  EXPECT_TRUE(put.closed_after);

  auto get = http_request(server.port(), "GET", "/scope/key");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.content_length, blob.size());
  EXPECT_EQ(get.body, blob);
  EXPECT_TRUE(get.closed_after);

  auto del = http_request(server.port(), "DELETE", "/scope/key");
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(del.content_length, 0u);
  EXPECT_EQ(http_request(server.port(), "GET", "/scope/key").status, 404);
  EXPECT_EQ(server.stats().stored_keys, 0u);
  // DELETE of an absent key is still 200.
  EXPECT_EQ(http_request(server.port(), "DELETE", "/nothing/here").status, 200);
}

TEST(KvServer, EveryReplyCarriesAnExactCaseContentLengthAndCloses) {
  KvServerThread server;
  const auto check = [](const HttpResponse& r, int status, std::size_t length) {
    EXPECT_EQ(r.status, status) << r.head;
    EXPECT_NE(r.head.find("\r\nContent-Length: " + std::to_string(length) + "\r\n"),
              std::string::npos)
        << r.head;
    EXPECT_TRUE(r.closed_after);
    EXPECT_EQ(r.error, 0);
  };
  check(http_request(server.port(), "GET", "/s/missing"), 404, 0);
  check(http_request(server.port(), "PUT", "/s/k", ""), 200, 0);
  check(http_request(server.port(), "GET", "/s/k"), 200, 0);
  check(http_request(server.port(), "PUT", "/s/k", "abc"), 200, 0);
  check(http_request(server.port(), "GET", "/s/k"), 200, 3);
  check(http_request(server.port(), "DELETE", "/s/k"), 200, 0);
  check(http_request(server.port(), "POST", "/s/k"), 400, 0);
}

TEST(KvServer, AMissingKeyIsAnsweredAtOnce) {
  KvServerThread server;
  const auto start = Clock::now();
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(http_request(server.port(), "GET", "/global/1").status, 404);
  }
  EXPECT_LT(Clock::now() - start, 5s);  // 200 polls; a held 404 would take far longer
  EXPECT_EQ(server.stats().requests, 200u);
}

TEST(KvServer, KeysAreNotUrlDecoded) {
  KvServerThread server;
  EXPECT_EQ(http_request(server.port(), "PUT", "/s/host:1", "colon").status, 200);
  EXPECT_EQ(http_request(server.port(), "PUT", "/s/host%3A1", "encoded").status, 200);
  EXPECT_EQ(http_request(server.port(), "GET", "/s/host:1").body, "colon");
  EXPECT_EQ(http_request(server.port(), "GET", "/s/host%3A1").body, "encoded");
}

TEST(KvServer, RankAndSizeTellsAStaticJobsWorkerItIsNotInTheJob) {
  LogCapture log;
  KvServerThread server;
  const auto start = Clock::now();
  auto r = http_request(server.port(), "GET", "/rank_and_size/node1:0");
  EXPECT_LT(Clock::now() - start, 1s);  // never held open
  EXPECT_EQ(r.status, 200);
  // gloo_context.cc parses the first comma-separated int; -1 makes it throw
  // "node1[0] has been removed from elastic job".
  EXPECT_EQ(r.body, "-1,-1,-1,-1,-1,-1");
  EXPECT_EQ(r.content_length, r.body.size());
  EXPECT_EQ(log.count("node1:0"), 1u) << log.all();
  EXPECT_EQ(log.count("in a static job"), 1u) << log.all();
  EXPECT_EQ(server.stats().elastic_queries, 1u);
  // A PUT into that scope is a plain key and does not change the answer.
  EXPECT_EQ(http_request(server.port(), "PUT", "/rank_and_size/node1:0", "0,1,0,1,0,1").status,
            200);
  EXPECT_EQ(http_request(server.port(), "GET", "/rank_and_size/node1:0").body, "-1,-1,-1,-1,-1,-1");
}

TEST(KvServer, ManyRankAndSizeQueriesLogOneLineAndACountAtClose) {
  LogCapture log;
  KvServerThread server;
  for (int lr = 0; lr < 8; ++lr) {
    const auto r = http_request(server.port(), "GET", "/rank_and_size/node0:" + std::to_string(lr));
    EXPECT_EQ(r.body, "-1,-1,-1,-1,-1,-1");
  }
  EXPECT_EQ(log.count("in a static job"), 1u) << log.all();
  EXPECT_EQ(log.count("node0:0"), 1u) << log.all();
  server.close();
  EXPECT_EQ(log.count("7 about elastic rank_and_size queries"), 1u) << log.all();
  EXPECT_EQ(server.stats().elastic_queries, 8u);
}

// The first PUT stored (a Horovod worker's hvd.init()) is reported once, with the client's
// address; reads, bad requests and refused PUTs are not.
TEST(KvServer, TheFirstStoredPutIsReportedOnce) {
  std::promise<std::string> first;
  int calls = 0;
  KvServerOptions options;
  options.max_stored_bytes = 200;
  options.on_first_put = [&](const std::string& peer) {
    if (++calls == 1) first.set_value(peer);
  };
  KvServerThread server(options);
  EXPECT_EQ(http_request(server.port(), "GET", "/global/0").status, 404);
  EXPECT_EQ(http_request(server.port(), "POST", "/global/0", "x").status, 400);
  EXPECT_EQ(http_request(server.port(), "PUT", "/global/0", std::string(300, 'x')).status, 507);
  EXPECT_EQ(server.stats().stored_keys, 0u);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(http_request(server.port(), "PUT", "/global/0", "a").status, 200);
  EXPECT_EQ(http_request(server.port(), "PUT", "/global/1", "b").status, 200);
  server.close();  // every call made on the io thread is done
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(first.get_future().get().starts_with("127.0.0.1:"));
}

TEST(KvServer, WorkerAddressesAreStoredLikeAnyAdHocKey) {
  KvServerThread server;
  // hvd.elastic.run registers the worker's notification service (base64 of a pickle).
  const std::string body = "gAWVKAAAAAAAAAB9lIwCbG+UXZSMCTEyNy4wLjAuMZRN6QOGlGFzQwQAAQID";
  EXPECT_EQ(http_request(server.port(), "PUT", "/worker_addresses/node1:0", body).status, 200);
  EXPECT_EQ(http_request(server.port(), "GET", "/worker_addresses/node1:0").body, body);
  EXPECT_EQ(server.stats().stored_keys, 1u);
  EXPECT_EQ(http_request(server.port(), "DELETE", "/worker_addresses/node1:0").status, 200);
  EXPECT_EQ(http_request(server.port(), "GET", "/worker_addresses/node1:0").status, 404);
  EXPECT_EQ(server.stats().stored_keys, 0u);
}

TEST(KvServer, APutOverTheStoredBytesCapIsRefusedWithOneLine) {
  LogCapture log;
  KvServerOptions options;
  options.max_stored_bytes = 1000;
  KvServerThread server(options);
  EXPECT_EQ(http_request(server.port(), "PUT", "/s/a", std::string(600, 'a')).status, 200);
  EXPECT_EQ(http_request(server.port(), "PUT", "/s/b", std::string(600, 'b')).status, 507);
  EXPECT_EQ(http_request(server.port(), "PUT", "/s/c", std::string(600, 'c')).status, 507);
  EXPECT_EQ(http_request(server.port(), "GET", "/s/b").status, 404);
  EXPECT_EQ(log.count("max_stored_bytes=1000"), 1u) << log.all();  // the second is held back
  EXPECT_EQ(server.stats().refused_stored, 2u);
  EXPECT_EQ(http_request(server.port(), "DELETE", "/s/a").status, 200);
  EXPECT_EQ(http_request(server.port(), "PUT", "/s/b", std::string(600, 'b')).status, 200);
  EXPECT_EQ(server.stats().stored_bytes, KvScopes::entry_cost("s", "b", 600));
}

TEST(KvServer, AtTheConnectionCapNewClientsWaitInTheBacklog) {
  LogCapture log;
  KvServerOptions options;
  options.max_connections = 2;
  options.request_timeout = 5s;
  KvServerThread server(options);
  RawConnection idle1(server.port()), idle2(server.port());
  for (int i = 0; i < 200 && server.stats().open_connections < 2; ++i) {
    std::this_thread::sleep_for(10ms);  // until both are accepted
  }
  ASSERT_EQ(server.stats().open_connections, 2u);
  auto waiting =
      std::async(std::launch::async, [&] { return http_request(server.port(), "GET", "/s/k"); });
  EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout);  // connected, not served
  idle1.close();
  ASSERT_EQ(waiting.wait_for(2s), std::future_status::ready);
  const auto r = waiting.get();
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.error, 0);
  const auto stats = server.stats();
  EXPECT_LE(stats.peak_connections, 2u);
  EXPECT_GE(stats.connection_pauses, 1u);
  EXPECT_GE(log.count("max_connections=2"), 1u) << log.all();
}

TEST(KvServer, CloseStopsAcceptingAndClosesOpenConnections) {
  KvServerThread server;
  const auto port = server.port();
  RawConnection idle(port);
  idle.send("GET /s/k HTTP/1.1\r\n");  // an unfinished request
  EXPECT_TRUE(hvdrun::test::wait_until([&] { return server.stats().open_connections == 1; }, 30s))
      << "the server took the connection";
  server.close();
  EXPECT_TRUE(idle.wait_closed(2s));
  const auto r = http_request(port, "GET", "/s/k");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.error, ECONNREFUSED);
  EXPECT_EQ(server.stats().open_connections, 0u);
}

TEST(KvServer, ResetWipesTheStoreAndTakesTheNewPlan) {
  KvServerThread server({}, plan_of(make_slots(1, 2)));
  EXPECT_EQ(http_request(server.port(), "PUT", "/global/0", "x").status, 200);
  EXPECT_EQ(http_request(server.port(), "PUT", "/adhoc/k", "y").status, 200);
  server.reset(plan_of(make_slots(1, 1)));
  EXPECT_EQ(server.stats().stored_keys, 0u);
  EXPECT_EQ(http_request(server.port(), "PUT", "/global/0", "x").status, 200);
  EXPECT_EQ(http_request(server.port(), "DELETE", "/global/0").status, 200);  // size 1 now
  EXPECT_EQ(http_request(server.port(), "GET", "/global/0").status, 404);
}

TEST(KvServer, ABindFailureNamesTheAddress) {
  boost::asio::io_context io;
  KvServer first(io, {}, {});
  KvServerOptions options;
  options.port = first.port();
  try {
    KvServer second(io, options, {});
    FAIL() << "bound twice";
  } catch (const NetworkError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())),
              std::string::npos)
        << e.what();
  }
  options.bind_address = "not-an-address";
  EXPECT_THROW(KvServer(io, options, {}), NetworkError);
}

}  // namespace
}  // namespace hvdrun::launcher::horovod::test
