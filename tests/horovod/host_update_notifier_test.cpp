// Horovod's worker notification messages (host_update_wire.h), HostUpdateNotifier and
// HostUpdates against a service in the test that reads and signs frames as Horovod's Wire does.
#include "launcher/horovod/updates/host_update_notifier.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launcher/horovod/updates/host_update_wire.h"
#include "launcher/horovod/updates/host_updates.h"

namespace hvdrun::launcher::horovod {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

const std::string kKey(32, 'k');
// cloudpickle.dumps(horovod.runner.common.util.network.AckResponse(), 5)
const std::string kAck(
    "\x80\x05\x95\x39\x00\x00\x00\x00\x00\x00\x00\x8c\x22horovod.runner.common.util.network\x94"
    "\x8c\x0b"
    "AckResponse\x94\x93\x94)\x81\x94.",
    68);

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// A worker's notification service: accepts connections one at a time, reads a frame and
// answers `reply` framed with `reply_key` (or nothing when `silent`).
class FakeService {
 public:
  FakeService(std::string reply_key, bool silent = false)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        reply_key_(std::move(reply_key)),
        silent_(silent),
        thread_([this] { serve(); }) {}
  ~FakeService() {
    stop_ = true;
    {
      // A connection being served may never send (its sender's io_context stopped): its read
      // ends now, instead of the join waiting for it forever.
      std::lock_guard lock(mutex_);
      if (serving_ >= 0) ::shutdown(serving_, SHUT_RDWR);
    }
    boost::system::error_code ignored;
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // The last body read, and how many were.
  std::optional<std::string> body() {
    std::lock_guard lock(mutex_);
    return bodies_.empty() ? std::nullopt : std::optional<std::string>(bodies_.back());
  }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mutex_);
    return bodies_;
  }
  bool signed_with_key() const { return signed_; }

 private:
  void serve() {
    while (!stop_) {
      tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      {
        std::lock_guard lock(mutex_);
        if (ec || stop_) return;
        serving_ = socket.native_handle();
      }
      serve_one(socket);
      std::lock_guard lock(mutex_);
      serving_ = -1;
    }
  }

  // One request: its frame read, recorded, acknowledged (unless silent).
  void serve_one(tcp::socket& socket) {
    boost::system::error_code ec;
    {
      std::string header(kFrameHeaderSize, '\0');
      if (asio::read(socket, asio::buffer(header), ec); ec) return;
      const auto head = read_frame_header(header, 1 << 20);
      if (!head) return;
      std::string body(head->body_size, '\0');
      if (asio::read(socket, asio::buffer(body), ec); ec) return;
      signed_ = frame_signed(kKey, *head, body);
      {
        std::lock_guard lock(mutex_);
        bodies_.push_back(body);
      }
      if (silent_) {
        while (!stop_) std::this_thread::sleep_for(10ms);
        return;
      }
      asio::write(socket, asio::buffer(frame_message(reply_key_, kAck)), ec);
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::string reply_key_;
  bool silent_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> signed_{false};
  std::mutex mutex_;
  int serving_ = -1;  // the connection being served, under mutex_
  std::vector<std::string> bodies_;
  std::thread thread_;
};

WorkerRegistration at(std::initializer_list<std::uint16_t> ports) {
  WorkerRegistration r;
  r.key = kKey;
  for (const auto port : ports) r.addresses.push_back({"lo", "127.0.0.1", port});
  return r;
}

// A port nothing listens on.
std::uint16_t closed_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

// Runs one send to its end: the error given to the callback.
std::optional<std::string> send(const WorkerRegistration& to, std::chrono::milliseconds timeout) {
  asio::io_context io;
  HostUpdateNotifier notifier(io, timeout);
  std::optional<std::string> result;
  notifier.send(to, 1795000000, HostUpdate::kAdded,
                [&](const std::string& error) { result = error; });
  io.run_for(10s);
  return result;
}

// HostsUpdatedRequest(1795000000, HostUpdateResult.added) as hvdrun pickles it; CPython's
// pickle.loads with Horovod 0.28.1 imported gives that object (the compatibility tests send it
// to real workers).
TEST(HostUpdateWire, TheRequestPickle) {
  EXPECT_EQ(hex(hosts_updated_request(1795000000, HostUpdate::kAdded)),
            "800263686f726f766f642e72756e6e65722e656c61737469632e776f726b65720a486f7374735570"
            "6461746564526571756573740a29817d28580900000074696d657374616d708a08c086fd6a000000"
            "00580300000072657363686f726f766f642e72756e6e65722e656c61737469632e776f726b65720a"
            "486f7374557064617465526573756c740a4b02855275622e");
}

TEST(HostUpdateWire, FramesAreSignedAsHorovodSignsThem) {
  // hmac.new(b'k' * 32, b'hello', hashlib.sha256)
  const auto frame = frame_message(kKey, "hello");
  EXPECT_EQ(hex(frame),
            "b77dedb81d7deb352f617552af07a682c4267366ef53870025bc48b701c8a76d05000000"
            "68656c6c6f");
  const auto head = read_frame_header(frame.substr(0, kFrameHeaderSize), 100);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->body_size, 5u);
  EXPECT_TRUE(frame_signed(kKey, *head, "hello"));
  EXPECT_FALSE(frame_signed(kKey, *head, "hellp"));
  EXPECT_FALSE(frame_signed(std::string(32, 'x'), *head, "hello"));
  EXPECT_FALSE(read_frame_header(frame.substr(0, kFrameHeaderSize), 4));  // over the cap
  std::string negative = frame.substr(0, kFrameHeaderSize);
  negative[kFrameHeaderSize - 1] = '\x80';
  EXPECT_FALSE(read_frame_header(negative, 1 << 30));
  EXPECT_FALSE(read_frame_header("short", 100));
}

TEST(HostUpdateNotifier, ASignedAcknowledgementEndsIt) {
  FakeService service(kKey);
  EXPECT_EQ(send(at({service.port()}), 5s), std::string());
  EXPECT_EQ(service.body(), hosts_updated_request(1795000000, HostUpdate::kAdded));
  EXPECT_TRUE(service.signed_with_key());
}

TEST(HostUpdateNotifier, AReplySignedWithAnotherKeyIsNotAnAcknowledgement) {
  FakeService service(std::string(32, 'x'));
  const auto error = send(at({service.port()}), 5s);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find(":" + std::to_string(service.port()) +
                        " (lo): the reply is not signed with the worker's key"),
            std::string::npos)
      << *error;
}

TEST(HostUpdateNotifier, TheAddressesAreTriedInTurn) {
  FakeService service(kKey);
  const auto refused = closed_port();
  EXPECT_EQ(send(at({refused, service.port()}), 5s), std::string());
  const auto error = send(at({refused}), 5s);
  ASSERT_TRUE(error);
  EXPECT_EQ(*error, "127.0.0.1:" + std::to_string(refused) + " (lo): connect: Connection refused");
}

TEST(HostUpdateNotifier, AServiceThatDoesNotAnswerTimesOut) {
  FakeService service(kKey, true);
  const auto start = std::chrono::steady_clock::now();
  const auto error = send(at({service.port()}), 300ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("reply: no answer within 300 ms"), std::string::npos) << *error;
}

TEST(HostUpdateNotifier, ACancelledSendCallsNothing) {
  FakeService service(kKey, true);
  asio::io_context io;
  std::optional<HostUpdateNotifier> notifier(std::in_place, io, 5s);
  bool called = false;
  notifier->send(at({service.port()}), 1, HostUpdate::kRemoved,
                 [&](const std::string&) { called = true; });
  io.run_for(200ms);
  notifier.reset();  // the destructor cancels
  io.restart();
  io.run_for(200ms);
  EXPECT_FALSE(called);
}

// A change waits for rank 0's registration (another worker's does not do), is sent when it
// comes, and a second change adds its flag; the same change again is not sent at once; a
// re-formation takes them in.
TEST(HostUpdates, AChangeWaitsForRankZerosRegistration) {
  FakeService service(kKey);
  asio::io_context io;
  std::vector<std::string> notes;
  HostUpdates updates(io, 5s, 60s, [&](const std::string& line) { notes.push_back(line); });
  updates.changed(HostUpdate::kAdded, "slots added by the discovery script", 7);
  EXPECT_TRUE(updates.pending());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "slots added (slots added by the discovery script); the Horovod workers are told "
            "once rank 0 has registered its notification service (hvd.elastic.run)");
  updates.registered(3, at({service.port()}));
  io.run_for(300ms);
  EXPECT_FALSE(service.body());
  updates.changed(HostUpdate::kRemoved, "slots removed by the discovery script", 7);
  EXPECT_EQ(notes.size(), 1u);  // said once
  updates.registered(7, at({service.port()}));
  io.restart();
  io.run_for(500ms);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1],
            "told the Horovod workers that slots were added and removed (slots added by the "
            "discovery script; slots removed by the discovery script); they re-form at their "
            "next state.commit()");
  const auto body = service.body();
  ASSERT_TRUE(body);
  EXPECT_EQ(body->substr(body->size() - 7), std::string("K\x03\x85Rub.", 7));  // mixed
  EXPECT_EQ(updates.pending_reason(),
            "slots added by the discovery script; slots removed by the discovery script");
  // The same change again (the next discovery run) is not sent now.
  updates.changed(HostUpdate::kAdded, "slots added by the discovery script", 7);
  io.restart();
  io.run_for(300ms);
  EXPECT_EQ(service.bodies().size(), 1u);
  EXPECT_EQ(notes.size(), 2u);
  updates.reformed();
  EXPECT_FALSE(updates.pending());
  EXPECT_EQ(updates.pending_reason(), "");
}

// Until a re-formation takes the change in, it is sent again with the same timestamp (a
// notice Horovod dropped while it re-formed for another reason reaches it again); said once.
TEST(HostUpdates, AChangeIsSentAgainUntilTheWorkersReForm) {
  FakeService service(kKey);
  asio::io_context io;
  std::vector<std::string> notes;
  HostUpdates updates(io, 5s, 100ms, [&](const std::string& line) { notes.push_back(line); });
  updates.registered(0, at({service.port()}));
  updates.changed(HostUpdate::kAdded, "slots free again after a cooldown", 0);
  io.run_for(650ms);
  const auto sent = service.bodies();
  ASSERT_GE(sent.size(), 3u);
  for (const auto& body : sent) EXPECT_EQ(body, sent[0]);
  EXPECT_EQ(notes.size(), 1u);
  updates.reformed();
  io.restart();
  io.run_for(400ms);
  EXPECT_EQ(service.bodies().size(), sent.size());
}

// Rank 0's service cannot be reached: warned about once, tried again, and told when it can be
// reached (rank 0 registered anew after a re-formation for another reason, say).
TEST(HostUpdates, AServiceThatCannotBeReachedIsTriedAgain) {
  asio::io_context io;
  std::vector<std::string> notes;
  HostUpdates updates(io, 5s, 100ms, [&](const std::string& line) { notes.push_back(line); });
  const auto refused = closed_port();
  updates.registered(0, at({refused}));
  updates.changed(HostUpdate::kAdded, "slots free again after a cooldown", 0);
  // Until the refusal is noted (at most 5 s: a loaded machine is slow), and a retry more.
  for (int i = 0; i < 50 && notes.empty(); ++i) io.run_for(100ms);
  io.run_for(200ms);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "warning: could not tell the Horovod workers that slots were added (rank "
            "0's notification service: 127.0.0.1:" +
                std::to_string(refused) +
                " (lo): connect: Connection refused); trying again every 100 ms while "
                "they keep their generation");
  EXPECT_TRUE(updates.pending());
  FakeService service(kKey);
  updates.registered(0, at({service.port()}));
  io.restart();
  for (int i = 0; i < 50 && notes.size() < 2; ++i) io.run_for(100ms);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1],
            "told the Horovod workers that slots were added (slots free again after a "
            "cooldown); they re-form at their next state.commit()");
  EXPECT_TRUE(service.body());
}

}  // namespace
}  // namespace hvdrun::launcher::horovod
