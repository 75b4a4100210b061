// The bounded pickle reader and the worker registration it decodes, on pickles made by
// CPython 3.11's pickle (protocols 3 to 5, as cloudpickle writes them), and on hostile input.
#include "launcher/horovod/updates/pickle_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "launcher/horovod/updates/worker_registration.h"

namespace hvdrun::launcher::horovod {
namespace {

using Kind = PickleNode::Kind;

std::string unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

PickleTree read_ok(const std::string& data) {
  std::string error;
  auto tree = read_pickle(data, error);
  EXPECT_TRUE(tree.has_value()) << error;
  return tree ? std::move(*tree) : PickleTree{};
}

std::string read_error(const std::string& data) {
  std::string error;
  EXPECT_FALSE(read_pickle(data, error).has_value());
  return error;
}

// pickle.dumps((None, True, False, -5, 300, 70000, -70000, 2**40, -2**63, 'é', [], ()), 4)
TEST(PickleReader, ScalarsAndEmptyContainers) {
  const auto tree = read_ok(
      unhex("8004953300000000000000284e88894afbffffff4d2c014a701101004a90eefeff8a06000000000001"
            "8a0800000000000000808c02c3a9945d942974942e"));
  const auto& root = tree.at(tree.root);
  ASSERT_EQ(root.kind, Kind::kTuple);
  ASSERT_EQ(root.items.size(), 12u);
  EXPECT_EQ(tree.at(root.items[0]).kind, Kind::kNone);
  EXPECT_EQ(tree.at(root.items[1]).number, 1);
  EXPECT_EQ(tree.at(root.items[2]).kind, Kind::kBool);
  EXPECT_EQ(tree.at(root.items[2]).number, 0);
  const std::int64_t numbers[] = {-5, 300, 70000, -70000, std::int64_t{1} << 40, INT64_MIN};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(tree.at(root.items[3 + i]).kind, Kind::kInt);
    EXPECT_EQ(tree.at(root.items[3 + i]).number, numbers[i]) << i;
  }
  EXPECT_EQ(tree.at(root.items[9]).text, "\xc3\xa9");
  EXPECT_EQ(tree.at(root.items[10]).kind, Kind::kList);
  EXPECT_EQ(tree.at(root.items[11]).kind, Kind::kTuple);
}

// A list memoized once and referred to twice is one node; a list that holds itself is read
// without looping.
TEST(PickleReader, MemoSharesAndCyclesCostNothing) {
  const auto shared = read_ok(
      unhex("80049528000000000000007d94288c0161945d948c0831302e302e302e31944b018694618c01629468"
            "027543026b6b9486942e"));
  const auto& dict = shared.at(shared.at(shared.root).items[0]);
  ASSERT_EQ(dict.items.size(), 4u);
  EXPECT_EQ(dict.items[1], dict.items[3]);
  const auto cycle = read_ok(unhex("80049506000000000000005d946800612e"));
  const auto& list = cycle.at(cycle.root);
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items[0], cycle.root);
}

TEST(PickleReader, TuplesFromAMarkAndOfFixedSize) {
  const auto four = read_ok(unhex("8004950c00000000000000284b014b024b034b0474942e"));
  EXPECT_EQ(four.at(four.root).items.size(), 4u);
  const auto three = read_ok(unhex("80049509000000000000004b014b024b0387942e"));
  EXPECT_EQ(three.at(three.root).items.size(), 3u);
}

TEST(PickleReader, HostileInputIsRefusedWithItsOffset) {
  // A named class (GLOBAL) is never built.
  EXPECT_EQ(read_error("\x80\x02"
                       "cos\nsystem\n"),
            "unsupported pickle opcode 0x63 at offset 2");
  // pickle.dumps(2**64, 4)
  EXPECT_EQ(read_error(unhex("8004950c000000000000008a090000000000000000012e")),
            "an integer wider than 64 bits at offset 11");
  EXPECT_EQ(read_error("\x80\x04\x8c\x05"
                       "ab"),
            "truncated at offset 2");
  EXPECT_EQ(read_error("X\xff\xff\xff\x7f"), "truncated at offset 0");
  EXPECT_EQ(read_error("\x80\x09."), "unsupported pickle protocol at offset 0");
  EXPECT_EQ(read_error("N"), "no STOP opcode before the end at offset 1");
  EXPECT_EQ(read_error(""), "no STOP opcode before the end at offset 0");
  EXPECT_EQ(read_error("NN."),
            "STOP at offset 2 with 2 values and 0 marks on the stack (1 value and no mark "
            "expected)");
  EXPECT_EQ(read_error("Na."), "APPEND without its container at offset 1");
  EXPECT_EQ(read_error(")Na."), "APPEND into the wrong kind of value at offset 2");
  EXPECT_EQ(read_error("}(Nu."), "SETITEMS of a key alone at offset 3");
  EXPECT_EQ(read_error("]N(a."), "APPEND without its container at offset 3");
  EXPECT_EQ(read_error("e."), "no MARK before at offset 0");
  EXPECT_EQ(read_error("h\x01."), "a memo entry never stored at offset 0");
  EXPECT_EQ(read_error("N(N\x86."), "a tuple across a MARK at offset 3");
  EXPECT_EQ(read_error("N\x87."), "a tuple of more values than the stack holds at offset 1");
}

TEST(PickleReader, TheNumberOfValuesIsBounded) {
  const std::string many(kMaxPickleNodes + 1, 'N');
  EXPECT_EQ(read_error(many + "."),
            "more than the allowed values at offset " + std::to_string(kMaxPickleNodes));
  // References to one memo entry take no new node, but the stack that holds them is bounded.
  std::string gets = "]\x94";
  for (std::size_t i = 0; i < kMaxPickleNodes; ++i) gets += std::string("h\x00", 2);
  EXPECT_EQ(read_error(gets + "."),
            "more than the allowed values at offset " + std::to_string(2 * kMaxPickleNodes));
}

// base64 of pickle.dumps(({'lo': [('127.0.0.1', 40123)]}, b'k' * 32), 5), as
// base64.encodebytes writes it (with line ends); Horovod sends it without.
TEST(WorkerRegistration, ReadsWhatHorovodRegisters) {
  std::string error;
  const auto one = read_worker_registration(
      "gAWVQgAAAAAAAAB9lIwCbG+UXZSMCTEyNy4wLjAuMZRNu5yGlGFzQyBra2tra2tra2tra2tra2tr\n"
      "a2tra2tra2tra2tra2tra5SGlC4=\n",
      error);
  ASSERT_TRUE(one) << error;
  ASSERT_EQ(one->addresses.size(), 1u);
  EXPECT_EQ(one->addresses[0].interface, "lo");
  EXPECT_EQ(one->addresses[0].ip, "127.0.0.1");
  EXPECT_EQ(one->addresses[0].port, 40123);
  EXPECT_EQ(one->key, std::string(32, 'k'));
  // ({'eth0': [('10.0.0.2', 40123), ('10.0.0.3', 5)], 'lo': [('127.0.0.1', 65535)]},
  //  bytes(range(32)))
  const auto two = read_worker_registration(
      "gAWVbQAAAAAAAAB9lCiMBGV0aDCUXZQojAgxMC4wLjAuMpRNu5yGlIwIMTAuMC4wLjOUSwWGlGWMAmxvlF2UjAkx"
      "MjcuMC4wLjGUTf//hpRhdUMgAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+UhpQu",
      error);
  ASSERT_TRUE(two) << error;
  ASSERT_EQ(two->addresses.size(), 3u);
  EXPECT_EQ(two->addresses[1].ip, "10.0.0.3");
  EXPECT_EQ(two->addresses[1].port, 5);
  EXPECT_EQ(two->addresses[2].interface, "lo");
  EXPECT_EQ(two->addresses[2].port, 65535);
  EXPECT_EQ(two->key.size(), 32u);
  EXPECT_EQ(two->key[31], '\x1f');
}

TEST(WorkerRegistration, ProtocolThreeWithItsBinputs) {
  std::string error;
  // pickle.dumps(({'eth0': [('10.1.2.3', 8080)]}, b'\0key'), 3), base64
  const std::string raw = unhex(
      "80037d710058040000006574683071015d7102580800000031302e312e322e3371034d901f86710461"
      "734304006b657971058671062e");
  const auto pickled = read_pickle(raw, error);
  ASSERT_TRUE(pickled) << error;
  EXPECT_EQ(pickled->at(pickled->root).kind, Kind::kTuple);
}

TEST(WorkerRegistration, ShapesOtherThanHorovodsAreRefused) {
  std::string error;
  EXPECT_FALSE(read_worker_registration("not base64!", error));
  EXPECT_EQ(error, "the body is not base64");
  // pickle.dumps((1, 2, 3), 4): a tuple, not of two.
  EXPECT_FALSE(read_worker_registration("gASVCQAAAAAAAABLAUsCSwOHlC4=", error));
  EXPECT_EQ(error, "the body is not a pickled ({interface: [(ip, port), ...]}, key) tuple");
  // "cos\nsystem\n..." in base64: a GLOBAL.
  EXPECT_FALSE(read_worker_registration("gAJjb3MKc3lzdGVtCi4=", error));
  EXPECT_EQ(error,
            "the body is not a pickle of plain data: unsupported pickle opcode 0x63 at offset 2");
  // ({'lo': [('127.0.0.1', 0)]}, b'k'): port 0.
  EXPECT_FALSE(read_worker_registration(
      "gASVIgAAAAAAAAB9lIwCbG+UXZSMCTEyNy4wLjAuMZRLAIaUYXNDAWuUhpQu", error));
  EXPECT_EQ(error, "a port of interface 'lo' is not a number from 1 to 65535");
  // ({'lo': [('::1', 5)]}, b'k'): Horovod advertises IPv4 addresses only.
  EXPECT_FALSE(
      read_worker_registration("gASVHAAAAAAAAAB9lIwCbG+UXZSMAzo6MZRLBYaUYXNDAWuUhpQu", error));
  EXPECT_EQ(error, "an address of interface 'lo' is not an IPv4 address");
  // ({'lo': [('127.0.0.1', 5)]}, b''): no key.
  EXPECT_FALSE(read_worker_registration(
      "gASVIQAAAAAAAAB9lIwCbG+UXZSMCTEyNy4wLjAuMZRLBYaUYXNDAJSGlC4=", error));
  EXPECT_EQ(error, "the key is empty");
}

}  // namespace
}  // namespace hvdrun::launcher::horovod
