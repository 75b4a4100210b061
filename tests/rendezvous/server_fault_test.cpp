// Server robustness: garbage and oversized frames, unauthenticated requests, auth timeout,
// a slot dropping before the generation completes, close() with pending waits, and the
// client's connect timeout and interruption.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>

#include "hvdrun/error.h"
#include "rendezvous/auth.h"
#include "tests/rendezvous/test_util.h"
#include "tests/support/wait_until.h"

namespace hvdrun::rdzv {
namespace {

using namespace std::chrono_literals;
using test::frame_header;
using test::kSecret;
using test::kTimeout;
using test::make_join;
using test::RawConn;
using test::ServerThread;
using test::slot_options;

// Expects the next message to be ErrorMsg{code} containing `text`, then the connection closed.
void expect_error_then_close(RawConn& raw, ErrorCode code, const std::string& text) {
  auto m = raw.receive();
  ASSERT_TRUE(m) << "connection closed without an error message";
  ASSERT_TRUE(std::holds_alternative<ErrorMsg>(m->body)) << type_name(type_of(m->body));
  const auto& e = std::get<ErrorMsg>(m->body);
  EXPECT_EQ(e.code, code) << e.text;
  EXPECT_NE(e.text.find(text), std::string::npos) << e.text;
  EXPECT_TRUE(raw.closed_by_server());
}

// A full join of every slot still works after the faults injected by a test.
void expect_server_still_serves(ServerThread& server) {
  Client c(server.endpoint(), kSecret, kTimeout);
  EXPECT_EQ(c.join(make_join(0), kTimeout).assign.size, 1);
}

TEST(ServerFaults, GarbageBytesCloseOnlyThatConnection) {
  ServerThread server(slot_options(1));
  RawConn bystander(server.endpoint().port);
  bystander.authenticate(kSecret);
  RawConn raw(server.endpoint().port);
  ASSERT_TRUE(raw.receive());  // the challenge
  raw.send_bytes(std::vector<std::uint8_t>(40, 0xEE));
  expect_error_then_close(raw, ErrorCode::kBadRequest, "bad magic 0xEEEEEEEE");
  bystander.send(Message{0, KvSet{"still", "here"}});
  auto ack = bystander.receive();
  ASSERT_TRUE(ack);
  EXPECT_TRUE(std::holds_alternative<KvValue>(ack->body));
  expect_server_still_serves(server);
}

TEST(ServerFaults, OversizedHeaderClosesOnlyThatConnection) {
  ServerThread server(slot_options(1));
  RawConn raw(server.endpoint().port);
  raw.authenticate(kSecret);
  raw.send(Message{0, KvSet{"first", "ok"}});  // authenticated: the request is answered
  auto ack = raw.receive();
  ASSERT_TRUE(ack);
  ASSERT_TRUE(std::holds_alternative<KvValue>(ack->body)) << type_name(type_of(ack->body));
  raw.send_bytes(frame_header(MsgType::kKvSet, kMaxBody + 1));
  expect_error_then_close(raw, ErrorCode::kBadRequest, "body length 16777217 exceeds 16777216");
  expect_server_still_serves(server);
}

// The server reads what arrived and takes whole frames from it: frames that come a byte at a
// time, and several of them (one larger than its first read) in one segment, are all handled.
TEST(ServerFaults, FramesSplitOrRunTogetherAreAllHandled) {
  ServerThread server(slot_options(1));
  RawConn raw(server.endpoint().port);
  const Message challenge = raw.receive().value();
  std::vector<std::uint8_t> bytes = encode(
      Message{0, Auth{compute_mac(kSecret, "rdzv", std::get<Challenge>(challenge.body).nonce)}});
  for (const auto& more : {encode(Message{0, KvSet{"big", std::string(3000, 'b')}}),
                           encode(Message{0, KvSet{"small", "s"}})}) {
    bytes.insert(bytes.end(), more.begin(), more.end());
  }
  raw.send_bytes(bytes);  // Auth, a 3 KB frame and a small one in one write
  for (const char* key : {"big", "small"}) {
    auto ack = raw.receive();
    ASSERT_TRUE(ack);
    ASSERT_TRUE(std::holds_alternative<KvValue>(ack->body)) << type_name(type_of(ack->body));
    EXPECT_EQ(std::get<KvValue>(ack->body).key, key);
  }
  for (std::uint8_t byte : encode(Message{0, KvGet{"big", 1000}})) {
    raw.send_bytes({byte});  // one segment per byte (RawConn sets TCP_NODELAY)
    std::this_thread::sleep_for(1ms);
  }
  auto value = raw.receive();
  ASSERT_TRUE(value);
  ASSERT_TRUE(std::holds_alternative<KvValue>(value->body)) << type_name(type_of(value->body));
  EXPECT_EQ(std::get<KvValue>(value->body).value, std::string(3000, 'b'));
}

TEST(ServerFaults, LargeFrameBeforeAuthenticationIsRefused) {
  ServerThread server(slot_options(1));
  RawConn raw(server.endpoint().port);
  ASSERT_TRUE(raw.receive());
  raw.send_bytes(frame_header(MsgType::kKvSet, 1u << 20));
  expect_error_then_close(raw, ErrorCode::kBadRequest, "before authentication");
}

TEST(ServerFaults, RequestBeforeAuthIsRefused) {
  ServerThread server(slot_options(1));
  RawConn raw(server.endpoint().port);
  ASSERT_TRUE(raw.receive());
  raw.send(Message{0, make_join(0)});
  expect_error_then_close(raw, ErrorCode::kBadRequest, "expected Auth, got Join");
  EXPECT_EQ(server.joined(), 0u);
}

TEST(ServerFaults, WrongMacGetsAuthFailed) {
  ServerThread server(slot_options(1));
  RawConn raw(server.endpoint().port);
  raw.authenticate("wrong");
  auto reply = raw.receive();
  ASSERT_TRUE(reply);
  ASSERT_TRUE(std::holds_alternative<ErrorMsg>(reply->body));
  EXPECT_EQ(std::get<ErrorMsg>(reply->body).code, ErrorCode::kAuthFailed);
  EXPECT_EQ(std::get<ErrorMsg>(reply->body).text, "authentication failed");
  EXPECT_TRUE(raw.closed_by_server());
}

TEST(ServerFaults, SilentPeerIsClosedAfterAuthTimeout) {
  ServerOptions o = slot_options(1);
  o.auth_timeout = 100ms;
  ServerThread server(o);
  RawConn raw(server.endpoint().port);
  ASSERT_TRUE(raw.receive());
  const auto start = std::chrono::steady_clock::now();
  expect_error_then_close(raw, ErrorCode::kTimeout, "not authenticated within 100 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

// The sessions' authentication deadlines share one timer: each silent peer is closed after
// its own timeout counted from its own connection (not with an earlier one's), and a peer that
// authenticated meanwhile is left alone.
TEST(ServerFaults, EachSilentPeerGetsItsOwnAuthTimeoutAndAnAuthenticatedOneStays) {
  ServerOptions o = slot_options(1);
  o.auth_timeout = 200ms;
  ServerThread server(o);
  RawConn first(server.endpoint().port);
  RawConn authenticated(server.endpoint().port);
  authenticated.authenticate(kSecret);
  std::this_thread::sleep_for(150ms);
  const auto later_start = std::chrono::steady_clock::now();
  RawConn later(server.endpoint().port);
  ASSERT_TRUE(first.receive());
  ASSERT_TRUE(later.receive());
  expect_error_then_close(first, ErrorCode::kTimeout, "not authenticated within 200 ms");
  expect_error_then_close(later, ErrorCode::kTimeout, "not authenticated within 200 ms");
  EXPECT_GE(std::chrono::steady_clock::now() - later_start, 200ms);
  authenticated.send(Message{0, make_join(0)});
  const auto reply = authenticated.receive();
  ASSERT_TRUE(reply) << "the authenticated peer was closed";
  ASSERT_TRUE(std::holds_alternative<Assign>(reply->body)) << type_name(type_of(reply->body));
  EXPECT_EQ(std::get<Assign>(reply->body).size, 1);
}

TEST(ServerFaults, StaleJoinAndSecondJoinAreRefused) {
  ServerThread server(slot_options(2));
  RawConn stale(server.endpoint().port);
  stale.authenticate(kSecret);
  stale.send(Message{5, make_join(0)});
  expect_error_then_close(stale, ErrorCode::kStaleGeneration,
                          "Join of slot 0 for generation 5 refused: current generation is 0");
  RawConn twice(server.endpoint().port);
  twice.authenticate(kSecret);
  twice.send(Message{0, make_join(0)});
  twice.send(Message{0, make_join(1)});
  expect_error_then_close(twice, ErrorCode::kBadRequest, "second Join on one connection");
}

TEST(ServerFaults, SlotThatDropsBeforeCompletionCanJoinAgain) {
  ServerThread server(slot_options(2));
  {
    RawConn raw(server.endpoint().port);
    raw.authenticate(kSecret);
    raw.send(Message{0, make_join(0)});
    hvdrun::test::wait_until([&] { return server.joined() != 0; }, std::chrono::seconds(1));
    ASSERT_EQ(server.joined(), 1u);
  }  // the connection drops
  hvdrun::test::wait_until([&] { return server.joined() != 1; }, std::chrono::seconds(1));
  EXPECT_EQ(server.joined(), 0u);
  std::thread second([&] {
    Client c(server.endpoint(), kSecret, kTimeout);
    EXPECT_EQ(c.join(make_join(1), kTimeout).assign.rank, 1);
  });
  Client again(server.endpoint(), kSecret, kTimeout);
  EXPECT_EQ(again.join(make_join(0), kTimeout).assign.rank, 0);
  second.join();
}

TEST(ServerFaults, CloseFailsPendingWaits) {
  ServerThread server(slot_options(2));
  std::thread waiter([&] {
    Client c(server.endpoint(), kSecret, kTimeout);
    try {
      c.get("never", kTimeout);
      ADD_FAILURE() << "get returned after close";
    } catch (const WorkerFailedError& e) {
      EXPECT_NE(std::string(e.what()).find("rendezvous closed"), std::string::npos) << e.what();
    }
  });
  std::thread joiner([&] {
    Client c(server.endpoint(), kSecret, kTimeout);
    EXPECT_THROW(c.join(make_join(0), kTimeout), WorkerFailedError);
  });
  EXPECT_TRUE(hvdrun::test::wait_until(
      [&] { return server.joined() != 0 && server.pending_gets() == 1; }, std::chrono::seconds(30)))
      << "the join and the get reached the server";
  server.close();
  waiter.join();
  joiner.join();
  EXPECT_THROW(Client(server.endpoint(), kSecret, 100ms), TimeoutError);  // not accepting
}

TEST(ServerFaults, ServerDestroyedWithConnectedClients) {
  auto server = std::make_unique<ServerThread>(slot_options(2));
  const Endpoint endpoint = server->endpoint();
  Client idle(endpoint, kSecret, kTimeout);
  Client waiting(endpoint, kSecret, kTimeout);
  std::thread waiter([&] { EXPECT_THROW(waiting.get("k", kTimeout), Error); });
  EXPECT_TRUE(hvdrun::test::wait_until([&] { return server->pending_gets() == 1; },
                                       std::chrono::seconds(30)))
      << "the get reached the server";
  server.reset();  // Server destroyed on its io thread; sessions unwind after it
  waiter.join();
  EXPECT_THROW(idle.get("k", 1s), NetworkError);
}

TEST(Client, ConnectTimeoutOnAClosedPort) {
  const std::uint16_t port = test::unused_port();  // nothing listens on it
  const auto start = std::chrono::steady_clock::now();
  try {
    Client c(Endpoint{"127.0.0.1", port}, kSecret, 200ms);
    FAIL() << "connected to a closed port";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(std::string(e.what()), "rendezvous 127.0.0.1:" + std::to_string(port) +
                                         " not reachable within 200 ms: Connection refused");
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 2s);
}

TEST(Client, ConnectRetriesUntilTheServerListens) {
  ServerOptions o = slot_options(1);
  std::unique_ptr<ServerThread> server;
  // Reserve a port, then start the server on it a little after the client began retrying.
  const std::uint16_t port = test::unused_port();
  boost::asio::io_context io;
  o.secret = std::string(kSecret);
  o.port = port;
  std::thread late([&] {
    std::this_thread::sleep_for(150ms);
    Server s(io, o);
    io.run_for(2s);
  });
  Client c(Endpoint{"127.0.0.1", port}, kSecret, 5s);
  EXPECT_EQ(c.local_address(), "127.0.0.1");
  EXPECT_EQ(c.join(make_join(0), kTimeout).assign.size, 1);
  io.stop();
  late.join();
}

// A get of a key nobody sets, with a 30 s timeout: the interrupt fd ends it at once with
// AbortedError, and the connection is closed afterwards.
TEST(Client, InterruptEndsAWaitEarly) {
  ServerThread server(slot_options(1));
  Client c(server.endpoint(), kSecret, kTimeout);
  c.join(make_join(0), kTimeout);
  UniqueFd interrupt(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(interrupt);
  c.set_interrupt(interrupt.get());
  std::thread raiser([&] {
    std::this_thread::sleep_for(100ms);
    const std::uint64_t one = 1;
    EXPECT_EQ(::write(interrupt.get(), &one, sizeof one), 8);
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    c.get("never-set", 30s);
    ADD_FAILURE() << "the get returned";
  } catch (const AbortedError& e) {
    EXPECT_NE(std::string(e.what()).find("the wait for value of key 'never-set' was interrupted"),
              std::string::npos)
        << e.what();
  }
  raiser.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_THROW(c.get("never-set", 1s), NetworkError);  // closed after the interruption
}

}  // namespace
}  // namespace hvdrun::rdzv
