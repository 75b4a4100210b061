// Slurm's compressed host lists and task counts, and the hosts of an allocation read from its
// environment; the host-list expansion checked against Slurm's own (`scontrol show hostnames`)
// on generated lists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "hvdrun/error.h"
#include "launcher/spec/slurm_allocation.h"
#include "launcher/spec/slurm_hostlist.h"

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SlurmHostlist, RangesKeepTheWidthOfTheirLowerBound) {
  EXPECT_THAT(expand_slurm_hostlist("node[01-04,07]"),
              ElementsAre("node01", "node02", "node03", "node04", "node07"));
  EXPECT_THAT(expand_slurm_hostlist("a[8-10]"), ElementsAre("a8", "a9", "a10"));
  EXPECT_THAT(expand_slurm_hostlist("x[07-9]"), ElementsAre("x07", "x08", "x09"));
  EXPECT_THAT(expand_slurm_hostlist("b[008-010]"), ElementsAre("b008", "b009", "b010"));
}

TEST(SlurmHostlist, SeveralEntriesGroupsAndSuffixes) {
  EXPECT_THAT(expand_slurm_hostlist("h[1-2],login,gpu[3]"),
              ElementsAre("h1", "h2", "login", "gpu3"));
  EXPECT_THAT(expand_slurm_hostlist("r[1-2]n[08-09]"),
              ElementsAre("r1n08", "r1n09", "r2n08", "r2n09"));
  EXPECT_THAT(expand_slurm_hostlist("node[1-3]-ib"),
              ElementsAre("node1-ib", "node2-ib", "node3-ib"));
  EXPECT_THAT(expand_slurm_hostlist("c[1-2]x[5,7]y"),
              ElementsAre("c1x5y", "c1x7y", "c2x5y", "c2x7y"));
  EXPECT_THAT(expand_slurm_hostlist("solo"), ElementsAre("solo"));
  EXPECT_THAT(expand_slurm_hostlist("a,,b"), ElementsAre("a", "b"));  // as Slurm
  EXPECT_THAT(expand_slurm_hostlist("e[1-2],e[1-2]"), ElementsAre("e1", "e2", "e1", "e2"));
}

TEST(SlurmHostlist, FaultsAreNamed) {
  EXPECT_EQ(usage_error([] { expand_slurm_hostlist("n[1-2"); }),
            "bad Slurm host list 'n[1-2': a '[' without its ']'");
  EXPECT_EQ(usage_error([] { expand_slurm_hostlist("n1-2]"); }),
            "bad Slurm host list 'n1-2]': a ']' without its '['");
  EXPECT_EQ(usage_error([] { expand_slurm_hostlist("z[010-8]"); }),
            "bad Slurm host list 'z[010-8]': the range '010-8' goes down");
  EXPECT_EQ(usage_error([] { expand_slurm_hostlist("p[a-b]"); }),
            "bad Slurm host list 'p[a-b]': 'a-b' in brackets is not a number or a range lo-hi");
  EXPECT_EQ(usage_error([] { expand_slurm_hostlist("w[]"); }),
            "bad Slurm host list 'w[]': an empty bracket group []");
  EXPECT_EQ(usage_error([] { expand_slurm_hostlist(""); }),
            "bad Slurm host list '': it names no host");
  EXPECT_THAT(usage_error([] { expand_slurm_hostlist("n{1..3}"); }),
              HasSubstr("'{' is not part of a host list this parser reads"));
  EXPECT_THAT(usage_error([] { expand_slurm_hostlist("n[1-999999999]"); }),
              HasSubstr("it names more than 1000000 hosts"));
  EXPECT_THAT(usage_error([] { expand_slurm_hostlist("a[1-1000]b[1-1000]c[1-1000]"); }),
              HasSubstr("it names more than 1000000 hosts"));
}

TEST(SlurmTasks, CountsWithRepeats) {
  EXPECT_THAT(expand_slurm_tasks_per_node("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(expand_slurm_tasks_per_node("4"), ElementsAre(4));
  EXPECT_THAT(expand_slurm_tasks_per_node("1(x2),3(x1)"), ElementsAre(1, 1, 3));
  for (const char* bad : {"", "0", "2(x0)", "2(3)", "2(x3", "x", "2,,1", "-1", "2(x3)1"}) {
    EXPECT_THAT(usage_error([&] { expand_slurm_tasks_per_node(bad); }),
                HasSubstr("bad Slurm task counts"))
        << bad;
  }
  EXPECT_THAT(usage_error([] { expand_slurm_tasks_per_node("1(x999999999)"); }),
              HasSubstr("more than 1000000 nodes"));
}

TEST(SlurmAllocation, NoJobNoAllocation) {
  EXPECT_FALSE(slurm_allocation({{"SLURM_JOB_NODELIST", "n[1-2]"}}).has_value());
}

TEST(SlurmAllocation, TheJobsNodesWithTheirTaskCounts) {
  const auto a = slurm_allocation({{"SLURM_JOB_ID", "17"},
                                   {"SLURM_JOB_NODELIST", "hvds-n[1-3]"},
                                   {"SLURM_TASKS_PER_NODE", "2(x2),1"}});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->job_id, "17");
  EXPECT_EQ(a->tasks, 5);
  EXPECT_EQ(a->hosts, (std::vector<HostSpec>{{"", "hvds-n1", 2, "SLURM_JOB_NODELIST"},
                                             {"", "hvds-n2", 2, "SLURM_JOB_NODELIST"},
                                             {"", "hvds-n3", 1, "SLURM_JOB_NODELIST"}}));
}

// Inside a step the step's nodes and counts win; outside one, stale SLURM_STEP_* do not count.
TEST(SlurmAllocation, AStepsOwnValuesInsideAStep) {
  std::map<std::string, std::string> env{{"SLURM_JOB_ID", "3"},
                                         {"SLURM_JOB_NODELIST", "n[1-4]"},
                                         {"SLURM_TASKS_PER_NODE", "2(x4)"},
                                         {"SLURM_STEP_NODELIST", "n[2-3]"},
                                         {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}};
  auto outside = slurm_allocation(env);
  ASSERT_TRUE(outside.has_value());
  EXPECT_EQ(outside->tasks, 8);
  env["SLURM_STEP_ID"] = "0";
  auto inside = slurm_allocation(env);
  ASSERT_TRUE(inside.has_value());
  ASSERT_EQ(inside->hosts.size(), 2u);
  EXPECT_EQ(inside->hosts[0].name, "n2");
  EXPECT_EQ(inside->tasks, 2);
  EXPECT_EQ(inside->hosts[0].origin, "SLURM_STEP_NODELIST");
}

TEST(SlurmAllocation, MismatchesAndBadValuesNameTheVariable) {
  EXPECT_EQ(usage_error([] {
              slurm_allocation({{"SLURM_JOB_ID", "3"},
                                {"SLURM_JOB_NODELIST", "n[1-3]"},
                                {"SLURM_TASKS_PER_NODE", "2(x2)"}});
            }),
            "SLURM_TASKS_PER_NODE=2(x2) counts 2 nodes, SLURM_JOB_NODELIST names 3");
  EXPECT_EQ(usage_error([] {
              slurm_allocation({{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n[1-"}});
            }),
            "SLURM_JOB_NODELIST: bad Slurm host list 'n[1-': a '[' without its ']'");
  EXPECT_THAT(usage_error([] {
                slurm_allocation({{"SLURM_JOB_ID", "3"}});
              }),
              HasSubstr("SLURM_JOB_NODELIST is not"));
}

// Slurm's own expansion, where its client is installed: `scontrol show hostnames` needs only a
// configuration file naming a controller, never contacted.
class ScontrolHostnames {
 public:
  ScontrolHostnames() {
    if (!std::filesystem::exists("/usr/bin/scontrol")) return;
    dir_ =
        std::filesystem::temp_directory_path() / ("hvdrun-scontrol-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "slurm.conf") << "ClusterName=hvdrun\nSlurmctldHost=localhost\n"
                                          "NodeName=n1\nPartitionName=p Nodes=n1\n";
    available_ = true;
  }
  ~ScontrolHostnames() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool available() const { return available_; }
  // The names scontrol prints, or nullopt where it refuses the list.
  std::optional<std::vector<std::string>> expand(const std::string& list) const {
    const std::string command = "SLURM_CONF='" + (dir_ / "slurm.conf").string() +
                                "' /usr/bin/scontrol show hostnames '" + list + "' 2>/dev/null";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return std::nullopt;
    std::string text;
    char buffer[4096];
    while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
    const int status = ::pclose(pipe);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    std::vector<std::string> names;
    std::size_t start = 0;
    for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
      names.push_back(text.substr(start, nl - start));
    }
    return names;
  }

 private:
  std::filesystem::path dir_;
  bool available_ = false;
};

// 300 lists drawn from the forms Slurm 22.05 writes and reads: entries of a prefix and one or
// two bracket groups of numbers and ranges (zero-padded or not), joined by commas.
TEST(SlurmHostlist, AgreesWithScontrolOnGeneratedLists) {
  const ScontrolHostnames scontrol;
  if (!scontrol.available()) GTEST_SKIP() << "no /usr/bin/scontrol (Debian's slurm-client)";
  std::mt19937 random(20261128);
  const auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(random);
  };
  const auto group = [&] {
    std::string body;
    const int items = pick(1, 3);
    for (int i = 0; i < items; ++i) {
      if (i) body += ',';
      const int width = pick(1, 3);
      const int lo = pick(0, 30), hi = lo + pick(0, 12);
      const auto padded = [&](int v) {
        std::string t = std::to_string(v);
        return std::string(t.size() < static_cast<std::size_t>(width) ? width - t.size() : 0, '0') +
               t;
      };
      body += padded(lo);
      if (pick(0, 1)) body += "-" + std::to_string(hi);
    }
    return "[" + body + "]";
  };
  int compared = 0;
  for (int n = 0; n < 300; ++n) {
    std::string list;
    const int entries = pick(1, 3);
    for (int e = 0; e < entries; ++e) {
      if (e) list += ',';
      list += std::string("abcxyz").substr(pick(0, 5), 1) + (pick(0, 1) ? "n" : "-");
      if (pick(0, 3) == 0) continue;  // a plain name
      list += group();
      if (pick(0, 2) == 0) list += "r" + group();
    }
    const auto expected = scontrol.expand(list);
    if (!expected) continue;  // a list Slurm itself refuses
    ++compared;
    EXPECT_EQ(expand_slurm_hostlist(list), *expected) << list;
  }
  EXPECT_GT(compared, 200) << "Slurm refused most generated lists: the test compared little";
}

}  // namespace
}  // namespace hvdrun::launcher
