// worker_environment(): per-slot values win over inherited ones, -x sets and forwards,
// inherited launcher variables are replaced while libhvdrun's settings pass, output sorted
// with one entry per name.
#include "launcher/workers/worker_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/plan/placement.h"

namespace hvdrun::launcher {
namespace {

using Env = std::map<std::string, std::string>;
using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;

struct Fixture {
  JobSpec spec;
  std::vector<Slot> slots;
  RendezvousInfo rendezvous{"127.0.0.1", 40000, "cafe01", "127.0.0.1",   40001,
                            40002,       "lo",  false,    "hvdrun-run-7"};
};

Fixture heterogeneous() {
  Fixture f;
  f.spec.num_proc = 3;
  f.spec.hosts = {HostSpec{"", "w0", 1, "-H"}, HostSpec{"", "w1", 2, "-H"}};
  f.spec.command = {"prog"};
  f.spec.start_timeout = std::chrono::seconds(42);
  f.spec.log_level = "debug";
  f.slots = place(f.spec.hosts, f.spec.num_proc);
  return f;
}

// Parses the "NAME=VALUE" list; checks it is sorted and has one entry per name.
Env as_map(const std::vector<std::string>& entries) {
  Env env;
  std::string previous;
  for (const auto& entry : entries) {
    const auto eq = entry.find('=');
    EXPECT_NE(eq, std::string::npos) << entry;
    const auto name = entry.substr(0, eq);
    EXPECT_LT(previous, name) << "not sorted or duplicate: " << entry;
    previous = name;
    env[name] = entry.substr(eq + 1);
  }
  return env;
}

TEST(WorkerEnv, PerSlotValues) {
  const auto f = heterogeneous();
  const auto env = as_map(worker_environment({{"PATH", "/bin"}}, f.spec, f.slots[2], f.rendezvous));
  const Env expected = {{"HOROVOD_CONTROLLER", "gloo"},
                        {"HOROVOD_CPU_OPERATIONS", "gloo"},
                        {"HOROVOD_CROSS_RANK", "0"},
                        {"HOROVOD_CROSS_SIZE", "1"},
                        {"HOROVOD_GLOO_IFACE", "lo"},
                        {"HOROVOD_GLOO_RENDEZVOUS_ADDR", "127.0.0.1"},
                        {"HOROVOD_GLOO_RENDEZVOUS_PORT", "40002"},
                        {"HOROVOD_HOSTNAME", "w1"},
                        {"HOROVOD_LOCAL_RANK", "1"},
                        {"HOROVOD_LOCAL_SIZE", "2"},
                        {"HOROVOD_RANK", "2"},
                        {"HOROVOD_SIZE", "3"},
                        {"HVDRUN_HOSTNAME", "w1"},
                        {"HVDRUN_LOG_LEVEL", "debug"},
                        {"HVDRUN_RENDEZVOUS_ADDR", "127.0.0.1:40000"},
                        {"HVDRUN_SECRET", "cafe01"},
                        {"HVDRUN_SLOT", "2"},
                        {"HVDRUN_START_TIMEOUT", "42"},
                        {"GROUP_RANK", "1"},
                        {"GROUP_WORLD_SIZE", "2"},
                        {"LOCAL_RANK", "1"},
                        {"LOCAL_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "127.0.0.1"},
                        {"MASTER_PORT", "40001"},
                        {"NCCL_ASYNC_ERROR_HANDLING", "1"},
                        {"NCCL_SOCKET_IFNAME", "lo"},
                        {"OMP_NUM_THREADS", "1"},
                        {"PATH", "/bin"},
                        {"PYTHONUNBUFFERED", "1"},
                        {"RANK", "2"},
                        {"ROLE_NAME", "default"},
                        {"ROLE_RANK", "2"},
                        {"ROLE_WORLD_SIZE", "3"},
                        {"TORCHELASTIC_MAX_RESTARTS", "0"},
                        {"TORCHELASTIC_RESTART_COUNT", "0"},
                        {"TORCHELASTIC_RUN_ID", "hvdrun-run-7"},
                        {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
                        {"WORLD_SIZE", "3"}};
  EXPECT_EQ(env, expected);
}

TEST(WorkerEnv, GroupRankIsTheNodeRank) {
  const auto f = heterogeneous();
  EXPECT_EQ(as_map(worker_environment({}, f.spec, f.slots[0], f.rendezvous))["GROUP_RANK"], "0");
  EXPECT_EQ(as_map(worker_environment({}, f.spec, f.slots[1], f.rendezvous))["GROUP_RANK"], "1");
  EXPECT_EQ(as_map(worker_environment({}, f.spec, f.slots[1], f.rendezvous))["HOROVOD_CROSS_RANK"],
            "1");
  // A slot of the second of two hosts left in an elastic job whose first host was hosts[1].
  Slot later = f.slots[1];
  later.host_index = 4;
  later.node_rank = 1;
  later.node_count = 2;
  const auto env = as_map(worker_environment({}, f.spec, later, f.rendezvous));
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), "2");
}

TEST(WorkerEnv, PerSlotValuesWinOverInheritedOnes) {
  const auto f = heterogeneous();
  const Env inherited = {{"HOROVOD_RANK", "7"}, {"RANK", "9"},        {"LOCAL_RANK", "5"},
                         {"WORLD_SIZE", "64"},  {"MASTER_PORT", "1"}, {"HOROVOD_SIZE", "64"}};
  const auto env = as_map(worker_environment(inherited, f.spec, f.slots[1], f.rendezvous));
  EXPECT_EQ(env.at("HOROVOD_RANK"), "1");
  EXPECT_EQ(env.at("HOROVOD_SIZE"), "3");
  EXPECT_EQ(env.at("RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_RANK"), "0");
  EXPECT_EQ(env.at("WORLD_SIZE"), "3");
  EXPECT_EQ(env.at("MASTER_PORT"), "40001");
}

TEST(WorkerEnv, InheritedLauncherVariablesAreReplacedAndRuntimeSettingsPass) {
  const auto f = heterogeneous();
  const Env inherited = {{"HVDRUN_SECRET", "old"},        {"HVDRUN_NETWORK_INTERFACE", "eth9"},
                         {"HVDRUN_TIMEOUT", "3"},         {"HVDRUN_BACKEND", "cpu"},
                         {"HVDRUN_FUSION_MODE", "group"}, {"HVDRUN_FUSION_THRESHOLD", "64K"}};
  const auto env = as_map(worker_environment(inherited, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("HVDRUN_SECRET"), "cafe01");
  EXPECT_THAT(env, Not(Contains(Key("HVDRUN_NETWORK_INTERFACE"))));
  EXPECT_EQ(env.at("HVDRUN_TIMEOUT"), "3");
  EXPECT_EQ(env.at("HVDRUN_BACKEND"), "cpu");
  EXPECT_EQ(env.at("HVDRUN_FUSION_MODE"), "group");
  EXPECT_EQ(env.at("HVDRUN_FUSION_THRESHOLD"), "64K");
}

TEST(WorkerEnv, ExportsSetAndForward) {
  auto f = heterogeneous();
  f.spec.env_forward = {{"FOO", "new"},
                        {"HVDRUN_TIMEOUT", std::nullopt},
                        {"RANK", "99"},
                        {"UNSET_HERE", std::nullopt},
                        {"EMPTY", ""}};
  const Env inherited = {{"FOO", "old"}, {"HVDRUN_TIMEOUT", "3"}, {"KEEP", "k"}};
  const auto env = as_map(worker_environment(inherited, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("FOO"), "new");
  EXPECT_EQ(env.at("HVDRUN_TIMEOUT"), "3");  // forwarded explicitly
  EXPECT_EQ(env.at("RANK"), "0");            // per-slot wins over -x
  EXPECT_EQ(env.at("KEEP"), "k");
  EXPECT_EQ(env.at("EMPTY"), "");
  EXPECT_THAT(env, Not(Contains(Key("UNSET_HERE"))));
}

TEST(WorkerEnv, UserPythonUnbufferedIsKept) {
  const auto f = heterogeneous();
  const auto env =
      as_map(worker_environment({{"PYTHONUNBUFFERED", "0"}}, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("PYTHONUNBUFFERED"), "0");
}

TEST(WorkerEnv, Ipv6RendezvousInBrackets) {
  auto f = heterogeneous();
  f.rendezvous.addr = "::1";
  EXPECT_EQ(
      as_map(worker_environment({}, f.spec, f.slots[0], f.rendezvous)).at("HVDRUN_RENDEZVOUS_ADDR"),
      "[::1]:40000");
}

TEST(WorkerEnv, NetworkInterfaceIsPassed) {
  auto f = heterogeneous();
  EXPECT_THAT(as_map(worker_environment({}, f.spec, f.slots[0], f.rendezvous)),
              Not(Contains(Key("HVDRUN_NETWORK_INTERFACE"))));
  f.spec.network_interfaces = {"lo", "eth0"};
  EXPECT_EQ(as_map(worker_environment({}, f.spec, f.slots[0], f.rendezvous))
                .at("HVDRUN_NETWORK_INTERFACE"),
            "lo");
}

// Horovod's rendezvous and controller are always hvdrun's; the interfaces replace inherited
// values (as horovodrun does) but give way to -x.
TEST(WorkerEnv, HorovodGlooVariables) {
  auto f = heterogeneous();
  const Env inherited = {{"HOROVOD_GLOO_RENDEZVOUS_PORT", "1"},
                         {"HOROVOD_CONTROLLER", "mpi"},
                         {"HOROVOD_CPU_OPERATIONS", "mpi"},
                         {"NCCL_SOCKET_IFNAME", "ib0"},
                         {"HOROVOD_GLOO_IFACE", "ib0"}};
  auto env = as_map(worker_environment(inherited, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("HOROVOD_GLOO_RENDEZVOUS_PORT"), "40002");
  EXPECT_EQ(env.at("HOROVOD_CONTROLLER"), "gloo");
  EXPECT_EQ(env.at("HOROVOD_CPU_OPERATIONS"), "gloo");
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "lo");
  EXPECT_EQ(env.at("HOROVOD_GLOO_IFACE"), "lo");

  f.spec.env_forward = {{"NCCL_SOCKET_IFNAME", "eth1"}, {"HOROVOD_CONTROLLER", "mpi"}};
  env = as_map(worker_environment(inherited, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "eth1");
  EXPECT_EQ(env.at("HOROVOD_GLOO_IFACE"), "lo");
  EXPECT_EQ(env.at("HOROVOD_CONTROLLER"), "gloo");

  // A local address on no interface (a host name as --rendezvous-addr): the inherited values
  // stay, nothing better is known.
  f.spec.env_forward.clear();
  f.rendezvous.gloo_iface.clear();
  env = as_map(worker_environment(inherited, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "ib0");

  // A remote host's interfaces are its agent's choice: nothing inherited reaches it.
  f.rendezvous.iface_by_agent = true;
  env = as_map(worker_environment(inherited, f.spec, f.slots[0], f.rendezvous));
  EXPECT_THAT(env, Not(Contains(Key("NCCL_SOCKET_IFNAME"))));
  EXPECT_THAT(env, Not(Contains(Key("HOROVOD_GLOO_IFACE"))));
}

// Tuning flags beat hvdrun's environment; -x beats both (the CLI refuses -x with a flag).
TEST(WorkerEnv, TuningVariablesLayer) {
  auto f = heterogeneous();
  f.spec.tuning_env = {{"HOROVOD_FUSION_THRESHOLD", "33554432"}, {"HOROVOD_CYCLE_TIME", "2"}};
  f.spec.env_forward = {{"HOROVOD_CYCLE_TIME", "5"}};
  const auto env = as_map(
      worker_environment({{"HOROVOD_FUSION_THRESHOLD", "1"}}, f.spec, f.slots[0], f.rendezvous));
  EXPECT_EQ(env.at("HOROVOD_FUSION_THRESHOLD"), "33554432");
  EXPECT_EQ(env.at("HOROVOD_CYCLE_TIME"), "5");
}

// torchrun's rule: OMP_NUM_THREADS=1 where workers share a host, unless the user set it.
TEST(WorkerEnv, OmpThreadsDefaultOnlyWhereWorkersShareAHost) {
  auto f = heterogeneous();  // w0 has one worker, w1 two
  EXPECT_THAT(as_map(worker_environment({}, f.spec, f.slots[0], f.rendezvous)),
              Not(Contains(Key("OMP_NUM_THREADS"))));
  EXPECT_EQ(as_map(worker_environment({}, f.spec, f.slots[1], f.rendezvous)).at("OMP_NUM_THREADS"),
            "1");
  EXPECT_EQ(as_map(worker_environment({{"OMP_NUM_THREADS", "4"}}, f.spec, f.slots[1], f.rendezvous))
                .at("OMP_NUM_THREADS"),
            "4");
  EXPECT_FALSE(omp_threads_defaulted({{"OMP_NUM_THREADS", "4"}}, f.spec, 2));
  f.spec.env_forward = {{"OMP_NUM_THREADS", "3"}};
  EXPECT_EQ(as_map(worker_environment({}, f.spec, f.slots[1], f.rendezvous)).at("OMP_NUM_THREADS"),
            "3");
  EXPECT_FALSE(omp_threads_defaulted({}, f.spec, 2));
  f.spec.env_forward.clear();
  EXPECT_TRUE(omp_threads_defaulted({}, f.spec, 2));
  EXPECT_FALSE(omp_threads_defaulted({}, f.spec, 1));
}

TEST(WorkerEnv, UserAsyncErrorHandlingIsKept) {
  const auto f = heterogeneous();
  EXPECT_EQ(as_map(worker_environment({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}, f.spec,
                                      f.slots[0], f.rendezvous))
                .at("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
            "0");
}

}  // namespace
}  // namespace hvdrun::launcher
