// Integration: --timeline writes a trace that parses as JSON (Boost.JSON here), with what the
// job did: an elastic job that loses a worker shows the worker's end, both generations and why
// the first ended; --timeline-max-events bounds it and its last event says what was dropped.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json/src.hpp>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/elastic_jobs.h"
#include "tests/integration/hvdrun_runner.h"

namespace hvdrun::itest {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

json::array read_trace(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  json::value value = json::parse(text.str(), ec);
  EXPECT_FALSE(ec) << ec.message() << "\n" << text.str();
  return value.is_array() ? value.as_array() : json::array{};
}

std::string arg(const json::object& event, const char* name) {
  const auto* args = event.if_contains("args");
  if (!args || !args->is_object()) return "";
  const auto* v = args->as_object().if_contains(name);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

std::vector<json::object> events_named(const json::array& trace, const std::string& prefix) {
  std::vector<json::object> out;
  for (const auto& e : trace) {
    const auto& o = e.as_object();
    if (o.at("ph") != "M" && std::string(o.at("name").as_string()).starts_with(prefix)) {
      out.push_back(o);
    }
  }
  return out;
}

TEST(Timeline, AnElasticJobThatLosesAWorkerIsDrawnWithBothGenerations) {
  TempDir dir;
  const auto trace_file = dir.path / "trace.json";
  HvdrunProcess job(elastic_job(dir,
                                {"--timeline", trace_file.string(), "-np", "4", "--min-np", "2",
                                 "--blacklist-cooldown-range", "60", "60"},
                                2));
  const pid_t victim = pid_of_slot(dir, 2);
  ASSERT_TRUE(job.wait_for_output("starts as rank", 4)) << "the first generation trains";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto r = job.finish(seconds(90));
  ASSERT_EQ(r.status, 0) << r.err;
  const json::array trace = read_trace(trace_file);
  const auto generations = events_named(trace, "generation ");
  ASSERT_EQ(generations.size(), 2u) << json::serialize(trace);
  EXPECT_EQ(generations[0].at("name"), "generation 0 (4 ranks)");
  EXPECT_NE(arg(generations[0], "ended").find("was killed by signal SIGKILL"), std::string::npos)
      << json::serialize(generations[0]);
  EXPECT_EQ(generations[1].at("name"), "generation 1 (3 ranks)");
  EXPECT_EQ(arg(generations[1], "ended"), "every rank exited 0");
  const auto workers = events_named(trace, "rank ");
  std::size_t killed = 0, finished_ok = 0;
  for (const auto& w : workers) {
    if (w.at("ph") != "X") continue;
    EXPECT_EQ(w.at("cat"), "worker");
    EXPECT_GE(w.at("dur").to_number<std::int64_t>(), 0);
    if (arg(w, "end") == "was killed by signal SIGKILL (9)") ++killed;
    if (arg(w, "end") == "exited with code 0") ++finished_ok;
  }
  EXPECT_EQ(killed, 1u) << json::serialize(trace);
  EXPECT_EQ(finished_ok, 3u) << json::serialize(trace);
  bool host_named = false;
  for (const auto& e : trace) {
    const auto& o = e.as_object();
    host_named |= o.at("ph") == "M" && arg(o, "name") == "host localhost";
  }
  EXPECT_TRUE(host_named);
}

// The cap counts every event, track names too: the file holds exactly --timeline-max-events,
// the last of which says what was dropped.
TEST(Timeline, ItIsBoundedExactlyAndSaysWhatWasDropped) {
  TempDir dir;
  const auto trace_file = dir.path / "trace.json";
  const auto r = run_hvdrun(
      {"--timeline", trace_file.string(), "--timeline-max-events", "10", "-np", "16", "true"}, {},
      seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  const json::array trace = read_trace(trace_file);
  ASSERT_EQ(trace.size(), 10u) << json::serialize(trace);
  const auto& last = trace.back().as_object();
  EXPECT_EQ(last.at("name"), "timeline capped");
  EXPECT_GE(last.at("args").at("dropped_events").to_number<int>(), 16);  // a track per worker
}

// What `text` holds as Chrome's JSON array format reads it: the closing "]" may be missing
// (hvdrun killed), but every event is whole.
json::array read_unterminated(const std::string& text) {
  std::string closed = text;
  while (!closed.empty() && std::isspace(static_cast<unsigned char>(closed.back()))) {
    closed.pop_back();
  }
  if (!closed.ends_with("]")) closed += "\n]";
  boost::system::error_code ec;
  json::value value = json::parse(closed, ec);
  EXPECT_FALSE(ec) << ec.message() << "\n" << text;
  return value.is_array() ? value.as_array() : json::array{};
}

// hvdrun SIGKILLed while its job runs: the timeline so far loads.
TEST(Timeline, ItLoadsAfterHvdrunIsKilled) {
  TempDir dir;
  const auto trace_file = dir.path / "trace.json";
  const auto pids = dir.path / "pids";
  std::filesystem::create_directory(pids);
  HvdrunProcess job(
      {"--timeline", trace_file.string(), "-np", "4", worker(), "sleep", pids.string()});
  ASSERT_EQ(wait_for_pids(pids, 4, seconds(30)).size(), 4u);
  job.signal(SIGKILL);
  job.finish(seconds(30));
  std::ifstream in(trace_file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_GE(read_unterminated(text.str()).size(), 2u) << text.str();  // the tracks named so far
}

// A full disk (a 4 KiB tmpfs in a mount namespace of the test's): the write that does not fit
// is cut off again, hvdrun says so, and the file ends with a whole event. Needs root.
TEST(Timeline, ItStaysLoadableOnAFullDisk) {
  if (::geteuid() != 0 || std::system("unshare -m true 2>/dev/null") != 0) {
    GTEST_SKIP() << "needs root and mount namespaces (a tmpfs of its own)";
  }
  TempDir dir;
  const auto small = dir.path / "small";
  std::filesystem::create_directory(small);
  const std::string script = "mount -t tmpfs -o size=4k tmpfs " + small.string() + " && " +
                             HVDRUN_BINARY + " --timeline " + small.string() +
                             "/t.json -np 32 true; cp " + small.string() + "/t.json " +
                             dir.path.string() + "/t.json";
  const auto r = HvdrunProcess("/usr/bin/unshare", {"-m", "/bin/sh", "-c", script}, {}, "/dev/null")
                     .finish(seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot write --timeline ")) << r.err;
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  std::ifstream in(dir.path / "t.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_LE(text.str().size(), 4096u);
  EXPECT_GE(read_unterminated(text.str()).size(), 3u) << text.str();
}

// --timeline-collectives: each rank's libhvdrun collectives on its track, with how long it
// waited for the others. Rank 1 sleeps 20 ms before each allreduce from the 10th on: ranks 0
// and 2 wait for it, it waits for nobody.
TEST(Timeline, CollectivesAreDrawnWithTheirWaitAndTransfer) {
  TempDir dir;
  const auto trace_file = dir.path / "trace.json";
  const auto r = run_hvdrun({"--timeline", trace_file.string(), "--timeline-collectives", "-np",
                             "3", STALL_WORKER, "60", "1", "10", "0.02", "every"},
                            {}, seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  const json::array trace = read_trace(trace_file);
  std::map<std::string, std::set<int>> numbers;  // rank -> collective numbers drawn
  std::map<std::string, std::vector<long>> waits;
  for (const auto& o : events_named(trace, "allreduce (float32, 4.0 KiB)")) {
    EXPECT_EQ(o.at("ph"), "X");
    EXPECT_EQ(o.at("cat"), "collective");
    EXPECT_EQ(arg(o, "bytes"), "4096");
    EXPECT_EQ(arg(o, "dtype"), "float32");
    const int seq = std::stoi(arg(o, "sequence"));
    numbers[arg(o, "rank")].insert(seq);
    if (seq > 10) waits[arg(o, "rank")].push_back(std::stol(arg(o, "wait_us")));
  }
  ASSERT_EQ(numbers.size(), 3u) << json::serialize(trace);
  for (const auto& [rank, seqs] : numbers) {
    EXPECT_EQ(seqs.size(), 60u) << "rank " << rank;
    EXPECT_EQ(*seqs.begin(), 1);
    EXPECT_EQ(*seqs.rbegin(), 60);
  }
  const auto median = [](std::vector<long> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  EXPECT_GE(median(waits["0"]), 15'000);
  EXPECT_GE(median(waits["2"]), 15'000);
  EXPECT_LT(median(waits["1"]), 5'000);
  EXPECT_TRUE(events_named(trace, "collectives left out").empty());
}

// --timeline-rank-events bounds each rank's collectives; its track says how many were left out.
TEST(Timeline, EachRanksCollectivesAreBounded) {
  TempDir dir;
  const auto trace_file = dir.path / "trace.json";
  const auto r =
      run_hvdrun({"--timeline", trace_file.string(), "--timeline-collectives",
                  "--timeline-rank-events", "25", "-np", "2", STALL_WORKER, "100", "0", "1", "0"},
                 {}, seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  const json::array trace = read_trace(trace_file);
  EXPECT_EQ(events_named(trace, "allreduce").size(), 50u) << json::serialize(trace);
  const auto left_out = events_named(trace, "collectives left out");
  ASSERT_EQ(left_out.size(), 2u) << json::serialize(trace);
  for (const auto& o : left_out) {
    EXPECT_EQ(arg(o, "drawn"), "25");
    EXPECT_EQ(arg(o, "over_the_bound"), "75");
    EXPECT_EQ(arg(o, "never_received"), "0");
  }
}

TEST(Timeline, CollectivesNeedATimeline) {
  const auto r = run_hvdrun({"--timeline-collectives", "-np", "1", "true"}, {}, seconds(30));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "--timeline-collectives draws into the timeline: give --timeline "
                       "FILE too"))
      << r.err;
}

}  // namespace
}  // namespace hvdrun::itest
