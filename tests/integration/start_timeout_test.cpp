// Integration: ranks that never join the rendezvous fail the job after --start-timeout, with
// a message naming them (needs libhvdrun: the init worker calls hvdrun::init()).
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

TEST(StartTimeout, MissingRankIsNamed) {
  auto r = run_hvdrun({"--start-timeout", "2", "-np", "2", INIT_WORKER}, {{"ITEST_SKIP_INIT", "1"}},
                      std::chrono::seconds(30));
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_LT(r.seconds, 15.0);
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has not called hvdrun::init(); raise --start-timeout"), std::string::npos)
      << r.err;
  // Said once, by the launcher: not also as a rendezvous log line.
  EXPECT_EQ(r.err.find("[error]"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("initialised"), std::string::npos) << r.out;
}

TEST(StartTimeout, AllRanksJoiningSucceeds) {
  auto r =
      run_hvdrun({"--start-timeout", "10", "-np", "3", INIT_WORKER}, {}, std::chrono::seconds(30));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 3u) << r.out;
  EXPECT_NE(r.out.find("]<stdout>:rank 2 of 3 initialised"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hvdrun::itest
