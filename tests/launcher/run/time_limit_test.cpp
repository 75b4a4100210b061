// TimeLimit: the run's time limit as a component, on a real io_context with a fake job behind
// its control interface (the io_context runs until the timer's handler ran: no sleep).
#include "launcher/run/time_limit.h"

#include <gtest/gtest.h>

#include "tests/launcher/job/fake_job_control.h"

namespace hvdrun::launcher {
namespace {

using std::chrono::milliseconds;
using test::FakeJob;

TEST(TimeLimit, CountsFromTheFirstStartAndEndsAJobUnderWay) {
  boost::asio::io_context io;
  FakeJob job;
  TimeLimit limit(io, milliseconds(1), "no report within 1 ms");
  limit.attached(job);
  io.run();
  EXPECT_TRUE(job.ended_for.empty()) << "not armed before the workers start";
  limit.workers_started({});
  limit.workers_started({});  // a later generation's start counts for nothing
  io.restart();
  io.run();
  ASSERT_EQ(job.ended_for.size(), 1u);
  EXPECT_EQ(job.ended_for[0], "no report within 1 ms");
  EXPECT_TRUE(limit.ran_out());
}

TEST(TimeLimit, AJobEndingAlreadyKeepsItsOutcome) {
  boost::asio::io_context io;
  FakeJob job;
  job.running = false;  // the fake's end_job answers "ending already"
  TimeLimit limit(io, milliseconds(1), "no report within 1 ms");
  limit.attached(job);
  limit.workers_started({});
  io.run();
  EXPECT_EQ(job.ended_for.size(), 1u);
  EXPECT_FALSE(limit.ran_out());
}

TEST(TimeLimit, TheJobsEndCancelsIt) {
  boost::asio::io_context io;
  FakeJob job;
  TimeLimit limit(io, std::chrono::hours(1), "never");
  limit.attached(job);
  limit.workers_started({});
  limit.job_ended();
  io.run();  // returns at once: the wait was cancelled
  EXPECT_TRUE(job.ended_for.empty());
  EXPECT_FALSE(limit.ran_out());
}

}  // namespace
}  // namespace hvdrun::launcher
