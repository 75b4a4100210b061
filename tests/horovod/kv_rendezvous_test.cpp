// Replays what each Horovod gloo worker of a static job does against the server (reference
// §4, "Per-worker sequence"): for the global, local_<host> and cross_<local_rank> contexts
// in order, PUT rank_<r> = hostname, GET rank_<i> for i < r without waiting, PUT <r> = one
// address per peer, wait for and GET every peer's <i> (polling every 10 ms), a barrier, and
// DELETE <r>. Each rank is a thread; every rank must read the addresses its peers made for
// it, and every planned scope must be empty at the end.
#include <gtest/gtest.h>

#include <barrier>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/horovod/horovod_http_client.h"
#include "tests/horovod/kv_server_thread.h"

namespace hvdrun::launcher::horovod::test {
namespace {

constexpr std::size_t kAddressSize = 24;
constexpr std::chrono::milliseconds kWaitTimeout{20'000};

// The address rank `from` of `scope` offers to `to`: fixed size, binary, unique.
std::string address(const std::string& scope, int from, int to) {
  std::string a(kAddressSize, '\0');
  a[0] = static_cast<char>(0xff);
  a[1] = static_cast<char>(from);
  a[2] = static_cast<char>(to);
  const std::string tag = scope.substr(0, kAddressSize - 4);
  std::copy(tag.begin(), tag.end(), a.begin() + 4);
  return a;
}

struct Context {
  std::string scope;
  int rank = 0;
  int size = 0;
};

struct Rendezvous {
  std::uint16_t port = 0;
  std::map<std::string, std::unique_ptr<std::barrier<>>> barriers;  // one per scope
  std::mutex mutex;
  std::vector<std::string> errors;
  int peer_blobs_checked = 0;

  void fail(const std::string& what) {
    std::lock_guard lock(mutex);
    errors.push_back(what);
  }
};

// gloo connectFullMesh over Horovod's HTTPStore, then the barrier and Finalize().
void connect_full_mesh(Rendezvous& rv, const Context& c, const std::string& hostname) {
  HorovodStore store(rv.port, c.scope);
  const std::string me = c.scope + " rank " + std::to_string(c.rank);
  store.set("rank_" + std::to_string(c.rank), hostname);
  for (int i = 0; i < c.rank; ++i) store.get("rank_" + std::to_string(i));  // 404 is fine
  std::string blob;
  for (int i = 0; i < c.size; ++i) {
    if (i != c.rank) blob += address(c.scope, c.rank, i);
  }
  store.set(std::to_string(c.rank), blob);
  int checked = 0;
  for (int i = 0; i < c.size; ++i) {
    if (i == c.rank) continue;
    store.wait({std::to_string(i)}, kWaitTimeout);
    const auto peer = store.get(std::to_string(i));
    if (!peer || peer->size() != kAddressSize * static_cast<std::size_t>(c.size - 1)) {
      rv.fail(me + ": bad blob of rank " + std::to_string(i));
      continue;
    }
    const std::size_t slot = static_cast<std::size_t>(c.rank < i ? c.rank : c.rank - 1);
    if (peer->substr(slot * kAddressSize, kAddressSize) != address(c.scope, i, c.rank)) {
      rv.fail(me + ": wrong address from rank " + std::to_string(i));
      continue;
    }
    ++checked;
  }
  rv.barriers.at(c.scope)->arrive_and_wait();
  store.finalize(c.rank);
  std::lock_guard lock(rv.mutex);
  rv.peer_blobs_checked += checked;
}

void run_worker(Rendezvous& rv, const Slot& s) {
  try {
    connect_full_mesh(rv, {"global", s.rank, s.size}, s.host);
    connect_full_mesh(rv, {"local_" + s.host, s.local_rank, s.local_size}, s.host);
    connect_full_mesh(rv, {"cross_" + std::to_string(s.local_rank), s.cross_rank, s.cross_size},
                      s.host);
  } catch (const std::exception& e) {
    rv.fail("rank " + std::to_string(s.rank) + ": " + e.what());
  }
}

// Runs one static start of the job; returns the number of peer blobs checked.
int run_job(KvServerThread& server, const std::vector<Slot>& slots) {
  Rendezvous rv;
  rv.port = server.port();
  std::map<std::string, int> members;
  for (const auto& s : slots) {
    ++members["global"];
    ++members["local_" + s.host];
    ++members["cross_" + std::to_string(s.local_rank)];
  }
  for (const auto& [scope, n] : members) {
    rv.barriers.emplace(scope, std::make_unique<std::barrier<>>(n));
  }
  std::vector<std::thread> threads;
  for (const auto& s : slots) threads.emplace_back([&rv, &s] { run_worker(rv, s); });
  for (auto& t : threads) t.join();
  for (const auto& e : rv.errors) ADD_FAILURE() << e;
  return rv.peer_blobs_checked;
}

// Peer blobs each start reads: sum over contexts of size * (size - 1).
int expected_reads(const std::vector<Slot>& slots) {
  const Slot& s = slots.front();
  const int hosts = s.cross_size, per_host = s.local_size, n = s.size;
  return n * (n - 1) + hosts * per_host * (per_host - 1) + per_host * hosts * (hosts - 1);
}

void expect_planned_scopes_empty(KvServerThread& server, const std::vector<Slot>& slots) {
  const auto stats = server.stats();
  EXPECT_EQ(stats.stored_keys, 0u);
  EXPECT_EQ(stats.stored_bytes, 0u);
  for (const auto& s : slots) {
    const auto r = std::to_string(s.rank);
    EXPECT_EQ(http_request(server.port(), "GET", "/global/" + r).status, 404);
    EXPECT_EQ(http_request(server.port(), "GET", "/global/rank_" + r).status, 404);
    EXPECT_EQ(
        http_request(server.port(), "GET", "/local_" + s.host + "/" + std::to_string(s.local_rank))
            .status,
        404);
    EXPECT_EQ(
        http_request(server.port(), "GET",
                     "/cross_" + std::to_string(s.local_rank) + "/" + std::to_string(s.cross_rank))
            .status,
        404);
  }
}

TEST(KvRendezvous, TwoRanksOnOneHost) {
  const auto slots = make_slots(1, 2);  // local size 2, two cross scopes of size 1
  KvServerThread server({}, plan_of(slots));
  EXPECT_EQ(run_job(server, slots), expected_reads(slots));
  expect_planned_scopes_empty(server, slots);
}

TEST(KvRendezvous, EightRanksOnFourHostsOfTwoSlots) {
  const auto slots = make_slots(4, 2);
  KvServerThread server({}, plan_of(slots));
  EXPECT_EQ(run_job(server, slots), expected_reads(slots));
  expect_planned_scopes_empty(server, slots);
  // hvd.shutdown() then hvd.init() in a static job: the same scopes serve again.
  EXPECT_EQ(run_job(server, slots), expected_reads(slots));
  expect_planned_scopes_empty(server, slots);
}

TEST(KvRendezvous, FourRanksOnFourHostsOfOneSlot) {
  const auto slots = make_slots(4, 1);  // local scopes of size 1, one cross scope of 4
  KvServerThread server({}, plan_of(slots));
  EXPECT_EQ(run_job(server, slots), expected_reads(slots));
  expect_planned_scopes_empty(server, slots);
}

}  // namespace
}  // namespace hvdrun::launcher::horovod::test
