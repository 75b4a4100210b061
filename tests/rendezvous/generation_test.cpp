// Generations of the rendezvous server: a new generation forms with its own slots after the
// last one, clients that connect then join it, its key-value store starts empty, and a client
// of the old generation is refused.
#include <gtest/gtest.h>

#include <thread>

#include "hvdrun/error.h"
#include "tests/rendezvous/test_util.h"
#include "tests/support/wait_until.h"

namespace hvdrun::rdzv {
namespace {

using namespace std::chrono_literals;
using test::kSecret;
using test::kTimeout;
using test::make_join;
using test::ServerThread;
using test::slot_options;

TEST(Generations, NextGenerationFormsWithNewSlotsAndAnEmptyStore) {
  ServerThread server(slot_options(1));
  {
    Client first(server.endpoint(), kSecret, kTimeout);
    EXPECT_EQ(first.join(make_join(0), kTimeout).generation, 0u);
    first.set("nccl_id", "old", kTimeout);
  }
  server.start_generation(slot_options(2).slots);
  std::vector<Assignment> assignments(2);
  std::vector<std::thread> ranks;
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    ranks.emplace_back([&, slot] {
      Client c(server.endpoint(), kSecret, kTimeout);
      EXPECT_EQ(c.generation(), 1u);  // learnt at authentication
      assignments[slot] = c.join(make_join(slot), kTimeout);
      EXPECT_THROW(c.get("nccl_id", 200ms), TimeoutError);  // generation 0's value is gone
    });
  }
  for (auto& t : ranks) t.join();
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    EXPECT_EQ(assignments[slot].generation, 1u);
    EXPECT_EQ(assignments[slot].assign.size, 2);
    EXPECT_EQ(assignments[slot].assign.rank, static_cast<int>(slot));
  }
}

TEST(Generations, AMemberOfTheOldGenerationIsToldItEnded) {
  ServerThread server(slot_options(2));
  Client early(server.endpoint(), kSecret, kTimeout);
  std::thread joiner([&] {
    try {
      early.join(make_join(0), 5s);
      ADD_FAILURE() << "joined a generation that was replaced";
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find("generation 0 ended: generation 1 is forming"),
                std::string::npos)
          << e.what();
    }
  });
  EXPECT_TRUE(
      hvdrun::test::wait_until([&] { return server.joined() != 0; }, std::chrono::seconds(30)))
      << "a worker joined";
  server.start_generation(slot_options(1).slots);
  joiner.join();
  Client next(server.endpoint(), kSecret, kTimeout);
  EXPECT_EQ(next.join(make_join(0), kTimeout).generation, 1u);
}

}  // namespace
}  // namespace hvdrun::rdzv
