// Host lists (-H items, host-file lines, their errors with FILE:LINE) and is_local_host().
#include "launcher/spec/hosts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <thread>

#include "hvdrun/error.h"
#include "launcher/spec/local_aliases.h"
#include "launcher/spec/local_host.h"
#include "launcher/spec/user_file.h"

namespace hvdrun::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string hosts_flag_error(std::string_view text) {
  try {
    parse_hosts_flag(text);
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no UsageError for -H " << text;
  return {};
}

std::string hostfile_error(std::string_view text) {
  std::vector<std::string> notes;
  try {
    parse_hostfile_text(text, "hosts.txt", notes);
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no UsageError for host file " << text;
  return {};
}

TEST(HostsFlag, Forms) {
  EXPECT_THAT(parse_hosts_flag("a"), ElementsAre(HostSpec{"", "a", 1, "-H"}));
  EXPECT_THAT(parse_hosts_flag("a:2,b.example.com:3"),
              ElementsAre(HostSpec{"", "a", 2, "-H"}, HostSpec{"", "b.example.com", 3, "-H"}));
  EXPECT_THAT(parse_hosts_flag("alice@node_1:2"),
              ElementsAre(HostSpec{"alice", "node_1", 2, "-H"}));
  EXPECT_THAT(parse_hosts_flag("[fe80::1]:4,[::1]"),
              ElementsAre(HostSpec{"", "fe80::1", 4, "-H"}, HostSpec{"", "::1", 1, "-H"}));
  EXPECT_THAT(parse_hosts_flag("bob@[2001:db8::7]:2"),
              ElementsAre(HostSpec{"bob", "2001:db8::7", 2, "-H"}));
  EXPECT_THAT(parse_hosts_flag("[fe80::1%eth0]:2"),
              ElementsAre(HostSpec{"", "fe80::1%eth0", 2, "-H"}));
  EXPECT_THAT(parse_hosts_flag(" a:1 , 10.0.0.2:2 "),
              ElementsAre(HostSpec{"", "a", 1, "-H"}, HostSpec{"", "10.0.0.2", 2, "-H"}));
}

TEST(HostsFlag, BadSlotCounts) {
  EXPECT_EQ(hosts_flag_error("node1:x"), "-H: bad slot count 'x' in 'node1:x'");
  EXPECT_THAT(hosts_flag_error("a:0"), HasSubstr("bad slot count '0' (must be at least 1)"));
  EXPECT_THAT(hosts_flag_error("a:-1"), HasSubstr("bad slot count '-1'"));
  EXPECT_THAT(hosts_flag_error("a:"), HasSubstr("bad slot count ''"));
  EXPECT_THAT(hosts_flag_error("a:+2"), HasSubstr("bad slot count '+2'"));
  EXPECT_THAT(hosts_flag_error("a:99999999999"), HasSubstr("slot count 99999999999 too large"));
  EXPECT_THAT(hosts_flag_error("[::1]:zero"), HasSubstr("bad slot count 'zero' in '[::1]:zero'"));
}

TEST(HostsFlag, BadNames) {
  EXPECT_THAT(hosts_flag_error("a b:2"), HasSubstr("bad host name 'a b'"));
  EXPECT_THAT(hosts_flag_error("bad/name"), HasSubstr("bad host name 'bad/name'"));
  EXPECT_THAT(hosts_flag_error("-oProxyCommand=x"), HasSubstr("bad host name '-oProxyCommand=x'"));
  EXPECT_THAT(hosts_flag_error("@host"), HasSubstr("bad user name ''"));
  EXPECT_THAT(hosts_flag_error("a@"), HasSubstr("bad host name ''"));
  EXPECT_THAT(hosts_flag_error("fe80::1"), HasSubstr("'fe80::1' must be written in brackets"));
  EXPECT_THAT(hosts_flag_error("[zz::1]:2"), HasSubstr("bad IPv6 address 'zz::1'"));
  EXPECT_THAT(hosts_flag_error("[::1"), HasSubstr("missing ']'"));
  EXPECT_THAT(hosts_flag_error("[::1]x"), HasSubstr("unexpected 'x' after ']'"));
  EXPECT_THAT(hosts_flag_error("a\nb"), HasSubstr("'a\\nb'"));
}

TEST(HostsFlag, EmptyEntriesAndDuplicates) {
  EXPECT_THAT(hosts_flag_error(""), HasSubstr("no hosts given"));
  EXPECT_THAT(hosts_flag_error("a,,b"), HasSubstr("-H: empty host entry in 'a,,b'"));
  EXPECT_THAT(hosts_flag_error("a,"), HasSubstr("empty host entry"));
  EXPECT_THAT(hosts_flag_error("a:2,b,a:1"), HasSubstr("host 'a' listed twice in 'a:2,b,a:1'"));
  EXPECT_THAT(hosts_flag_error("Node1,node1"), HasSubstr("host 'node1' listed twice"));
  EXPECT_THAT(hosts_flag_error("u@a,a"), HasSubstr("host 'a' listed twice"));
}

TEST(Hostfile, LinesCommentsAndCrlf) {
  const std::string text =
      "# cluster\r\n"
      "\r\n"
      "node1 slots=4\r\n"
      "node2:2   # trailing comment\n"
      "   \t\n"
      "node3\n"
      "carol@node4 slots = 3 max_slots=8\n"
      "[::1] slots=2\n"
      "node5 max-slots=2";
  std::vector<std::string> notes;
  EXPECT_THAT(
      parse_hostfile_text(text, "hosts.txt", notes),
      ElementsAre(HostSpec{"", "node1", 4, "hosts.txt:3"}, HostSpec{"", "node2", 2, "hosts.txt:4"},
                  HostSpec{"", "node3", 1, "hosts.txt:6"},
                  HostSpec{"carol", "node4", 3, "hosts.txt:7"},
                  HostSpec{"", "::1", 2, "hosts.txt:8"}, HostSpec{"", "node5", 1, "hosts.txt:9"}));
  EXPECT_THAT(notes,
              ElementsAre("hosts.txt:7: max_slots ignored", "hosts.txt:9: max_slots ignored"));
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  EXPECT_EQ(hostfile_error("a\n\nnode1 slots=x\n"),
            "hosts.txt:3: bad slot count 'x' in 'node1 slots=x'");
  EXPECT_EQ(hostfile_error("node1 slots=0"),
            "hosts.txt:1: bad slot count '0' (must be at least 1) in 'node1 slots=0'");
  EXPECT_THAT(hostfile_error("# c\nnode1 cpus=4"),
              HasSubstr("hosts.txt:2: unknown token 'cpus=4' (expected slots=N or max_slots=N)"));
  EXPECT_THAT(hostfile_error("node1 gpu"), HasSubstr("unknown token 'gpu'"));
  EXPECT_THAT(hostfile_error("node1:2 slots=3"), HasSubstr("hosts.txt:1: slot count given twice"));
  EXPECT_THAT(hostfile_error("node1 slots=2 slots=3"), HasSubstr("slot count given twice"));
  EXPECT_THAT(hostfile_error("a\nbad$name slots=1"), HasSubstr("hosts.txt:2: bad host name"));
  EXPECT_EQ(hostfile_error("node1\nnode2\nnode1 slots=2"),
            "hosts.txt:3: host 'node1' listed twice (first at hosts.txt:1) in 'node1 slots=2'; "
            "list each host once with its total slots");
  EXPECT_EQ(hostfile_error("# only comments\n\n"), "host file 'hosts.txt' lists no hosts");
  EXPECT_EQ(hostfile_error(""), "host file 'hosts.txt' lists no hosts");
}

TEST(Hostfile, AByteOrderMarkIsSkipped) {
  std::vector<std::string> notes;
  EXPECT_THAT(parse_hostfile_text("\xEF\xBB\xBFnode1 slots=2\nnode2\n", "hosts.txt", notes),
              ElementsAre(HostSpec{"", "node1", 2, "hosts.txt:1"},
                          HostSpec{"", "node2", 1, "hosts.txt:2"}));
  EXPECT_EQ(hostfile_error("\xEF\xBB\xBFnode1\nnode1"),
            "hosts.txt:2: host 'node1' listed twice (first at hosts.txt:1) in 'node1'; list each "
            "host once with its total slots");
}

// 100,000 distinct hosts (the duplicate check is a hash lookup, not a scan of the list), and
// the last one a duplicate of the first, found and named.
TEST(Hostfile, AHundredThousandHosts) {
  std::string text;
  for (int i = 0; i < 100'000; ++i) text += "node" + std::to_string(i) + " slots=2\n";
  std::vector<std::string> notes;
  const auto hosts = parse_hostfile_text(text, "big.txt", notes);
  ASSERT_EQ(hosts.size(), 100'000u);
  EXPECT_EQ(hosts.back(), (HostSpec{"", "node99999", 2, "big.txt:100000"}));
  EXPECT_THAT(hostfile_error(text + "NODE0\n"),
              HasSubstr("hosts.txt:100001: host 'NODE0' listed twice (first at hosts.txt:1)"));
}

TEST(Hostfile, ReadsFromDisk) {
  char path[] = "/tmp/hvdrun_hostsXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "localhost slots=2\n127.0.0.1\n";
  std::vector<std::string> notes;
  const auto hosts = parse_hostfile(path, notes);
  std::remove(path);
  EXPECT_THAT(hosts, ElementsAre(HostSpec{"", "localhost", 2, std::string(path) + ":1"},
                                 HostSpec{"", "127.0.0.1", 1, std::string(path) + ":2"}));
  EXPECT_TRUE(notes.empty());
}

TEST(Hostfile, UnreadableFiles) {
  std::vector<std::string> notes;
  try {
    parse_hostfile("/nonexistent/f", notes);
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "cannot read host file '/nonexistent/f': No such file or directory");
  }
  try {
    parse_hostfile("/tmp", notes);
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "cannot read host file '/tmp': Is a directory");
  }
  try {
    parse_hostfile("/dev/zero", notes);  // never ends: bounded, not read into all memory
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "cannot read host file '/dev/zero': larger than 64 MiB");
  }
}

// A FIFO nobody writes to is a usage error after the wait, not a hang; one with a writer reads.
TEST(UserFile, AFifoWithoutAWriterFailsAfterTheWaitAndOneWithAWriterIsRead) {
  char dir[] = "/tmp/hvdrun-fifo-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/hosts";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  try {
    read_user_file(fifo, "host file 'f'", kUserFileLimit, std::chrono::milliseconds(300));
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(
        e.what(),
        "cannot read host file 'f': it is not a regular file and gave nothing within 300 ms "
        "(a FIFO with no writer?)");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::thread writer([&] {
    std::ofstream(fifo) << "node-a:2\n";  // opens once the reader is there
  });
  EXPECT_EQ(read_user_file(fifo, "host file 'f'", kUserFileLimit, std::chrono::seconds(10)),
            "node-a:2\n");
  writer.join();
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST(Quoted, CutsWhatIsLongerThanItsLimit) {
  EXPECT_EQ(launcher::quoted(std::string(kQuotedMost, 'a')),
            "'" + std::string(kQuotedMost, 'a') + "'");
  EXPECT_EQ(launcher::quoted(std::string(kQuotedMost + 1, 'a')),
            "'" + std::string(kQuotedMost, 'a') + "...' (201 bytes)");
}

TEST(Quoted, EscapesControlCharacters) {
  EXPECT_EQ(quoted("a b"), "'a b'");
  EXPECT_EQ(quoted("a\nb\r\t\x01"), "'a\\nb\\r\\t\\x01'");
}

std::string own_hostname() {
  std::array<char, 256> buffer{};
  EXPECT_EQ(gethostname(buffer.data(), buffer.size() - 1), 0);
  return buffer.data();
}

TEST(LocalHost, LoopbackNamesAndAddresses) {
  EXPECT_TRUE(is_local_host("localhost"));
  EXPECT_TRUE(is_local_host("LocalHost"));
  EXPECT_TRUE(is_local_host("127.0.0.1"));
  EXPECT_TRUE(is_local_host("127.1.2.3"));
  EXPECT_TRUE(is_local_host("::1"));
}

TEST(LocalHost, OwnHostnameAndItsShortForm) {
  const auto name = own_hostname();
  EXPECT_TRUE(is_local_host(name));
  EXPECT_TRUE(is_local_host(name.substr(0, name.find('.'))));
}

TEST(LocalHost, OwnInterfaceAddress) {
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  std::string address;
  for (const ifaddrs* it = list; it != nullptr && address.empty(); it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    std::array<char, NI_MAXHOST> host{};
    if (getnameinfo(it->ifa_addr, sizeof(sockaddr_in), host.data(), host.size(), nullptr, 0,
                    NI_NUMERICHOST) == 0 &&
        std::string_view(host.data()).substr(0, 4) != "127.") {
      address = host.data();
    }
  }
  freeifaddrs(list);
  if (address.empty()) GTEST_SKIP() << "no non-loopback IPv4 interface";
  EXPECT_TRUE(is_local_host(address)) << address;
}

TEST(LocalHost, OtherAndUnresolvableNames) {
  EXPECT_FALSE(is_local_host(""));
  EXPECT_FALSE(is_local_host("192.0.2.1"));  // TEST-NET-1, never assigned
  EXPECT_FALSE(is_local_host("no-such-host.invalid"));
}

TEST(LocalAliases, NamesOfThisMachineBecomeOneHostWithTheirSlots) {
  std::vector<HostSpec> hosts = {{"", "localhost", 2, "-H"},
                                 {"", "node-b.invalid", 4, "-H"},
                                 {"", "127.0.0.1", 3, "hosts.txt:3"},
                                 {"", "::1", 1, "-H"}};
  EXPECT_EQ(merge_local_aliases(hosts, hosts.size()),
            "'localhost' (-H) and '127.0.0.1' (hosts.txt:3) and '::1' (-H) all name this "
            "machine: they run as one host, 'localhost', with 6 slots (local ranks and GPUs "
            "count one machine's slots)");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0], (HostSpec{"", "localhost", 6, "-H"}));
  EXPECT_EQ(hosts[1].name, "node-b.invalid");
}

// A discovery script that lists this machine 100,001 times (127.0.0.1, 127.0.0.2, ...): one
// short line that names the first three and counts the rest.
TEST(LocalAliases, ManyAliasesAreCountedNotListed) {
  std::vector<HostSpec> hosts;
  for (int i = 0; i <= 100'000; ++i) hosts.push_back({"", "alias-" + std::to_string(i), 1, "d.sh"});
  const std::string line =
      merge_local_aliases(hosts, hosts.size(), [](const std::string&) { return true; });
  EXPECT_LT(line.size(), 400u) << line.substr(0, 400);
  EXPECT_NE(line.find("'alias-0' (d.sh) and 'alias-1' (d.sh) and 'alias-2' (d.sh) and 99998 more "
                      "all name this machine"),
            std::string::npos)
      << line.substr(0, 400);
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].slots, 100'001);
}

TEST(LocalAliases, OnlyTheHostsThatGetRanksAreMerged) {
  std::vector<HostSpec> hosts = {{"", "localhost", 2, "-H"}, {"", "127.0.0.1", 2, "-H"}};
  EXPECT_EQ(hosts_used(hosts, 2), 1u);
  EXPECT_EQ(hosts_used(hosts, 3), 2u);
  EXPECT_EQ(hosts_used(hosts, 9), 2u);
  EXPECT_EQ(merge_local_aliases(hosts, hosts_used(hosts, 2)), "");
  EXPECT_EQ(hosts.size(), 2u);
  std::vector<HostSpec> one = {{"", "localhost", 2, "-H"}};
  EXPECT_EQ(merge_local_aliases(one, 1), "");
  std::vector<HostSpec> big = {{"", "localhost", kMaxSlots, "-H"}, {"", "127.0.0.1", 5, "-H"}};
  EXPECT_NE(merge_local_aliases(big, 2), "");
  EXPECT_EQ(big[0].slots, kMaxSlots);  // bounded as any host's slots
}

// LocalHosts answers as is_local_host does, from this machine's names and addresses read once.
TEST(LocalHosts, AnswersAsIsLocalHostForManyNames) {
  LocalHosts local;
  std::array<char, 256> name{};
  ASSERT_EQ(::gethostname(name.data(), name.size() - 1), 0);
  const std::vector<std::string> hosts = {"localhost",  "LOCALHOST",      "127.0.0.1",
                                          "::1",        "127.0.0.2",      name.data(),
                                          "10.200.0.1", "node-b.invalid", ""};
  for (const std::string& host : hosts) {
    EXPECT_EQ(local.contains(host), is_local_host(host)) << host;
    EXPECT_EQ(local.contains(host), is_local_host(host)) << host << " (again)";
  }
  EXPECT_TRUE(local.contains("127.0.0.1"));
  EXPECT_FALSE(local.contains("10.200.0.1"));
}

}  // namespace
}  // namespace hvdrun::launcher
