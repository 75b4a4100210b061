// Preflight without I/O: the probes' report lines, the verdict on each host (unreachable, the
// program missing, fewer GPUs than slots, a GPU that does not initialise, a matrix product or
// a link below the median by more than the slack, a probe that did not report), the table,
// the slowest GPU's matrix product, the host's NCCL allreduce or its communicator failing,
// the probes' own job, and the job that runs after the verdict.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/preflight/preflight_verdict.h"
#include "launcher/run/preflight_run.h"

namespace hvdrun::launcher {
namespace {

using testing::HasSubstr;

preflight::Report probe(const std::string& host, int rank, int local_rank,
                        const std::string& rest) {
  return preflight::read_report("HVDRUN_PREFLIGHT host=" + host + " rank=" + std::to_string(rank) +
                                " local_rank=" + std::to_string(local_rank) + " " + rest + "\n");
}

TEST(Preflight, AReportLineIsReadWithItsValuesDecoded) {
  const auto r = preflight::read_report(
      "HVDRUN_PREFLIGHT host=h1 program=prog%20is%20not%20on%20PATH%20here gpus=8 link=- x\n");
  EXPECT_EQ(r.at("host"), "h1");
  EXPECT_EQ(r.at("program"), "prog is not on PATH here");
  EXPECT_EQ(r.at("gpus"), "8");
  EXPECT_EQ(r.at("link"), "");  // "-": nothing
  EXPECT_FALSE(r.contains("x"));
  EXPECT_TRUE(preflight::read_report("something else").empty());
}

// Four hosts of one slot; `rest` per host.
PreflightVerdict four(const std::array<std::string, 4>& rest, double slack = 0.2) {
  std::vector<PreflightHost> hosts;
  std::vector<preflight::Report> reports;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "h" + std::to_string(i + 1);
    hosts.push_back({name, 1, {}});
    reports.push_back(probe(name, i, 0, rest[static_cast<std::size_t>(i)]));
  }
  return decide_preflight(hosts, reports, slack);
}

const std::string kGood = "program=ok gpus=0 gemm_gflops=10 link_mbps=1000";

TEST(Preflight, EveryHostPassesWhenAllAreAlike) {
  const auto v = four({kGood, kGood, kGood, kGood + " ring_ms=2.5"});
  EXPECT_TRUE(v.failed().empty());
  EXPECT_FALSE(v.gpu_job);
  EXPECT_EQ(*v.gemm_median, 10);
  EXPECT_EQ(*v.link_median, 1000);
  EXPECT_FALSE(v.ring_ms);  // only rank 0 says it
}

TEST(Preflight, ASlowLinkOrGemmBeyondTheSlackFailsItsHostAlone) {
  const auto v = four({kGood, "program=ok gpus=0 gemm_gflops=10 link_mbps=41",
                       "program=ok gpus=0 gemm_gflops=8.5 link_mbps=1000",
                       "program=ok gpus=0 gemm_gflops=7.0 link_mbps=1000"});
  EXPECT_EQ(v.failed(), (std::vector<std::string>{"h2", "h4"}));
  EXPECT_EQ(v.rows[1].failure, "link 41 MB/s, 96 % below the median 1000");
  EXPECT_EQ(v.rows[3].failure, "GEMM 7.0 GFLOP/s, 24 % below the median 9.2");
  EXPECT_TRUE(v.rows[2].passed());  // 8.5 is within 20 % of the median 9.25
  // With a slack of 50 %, only the link fails.
  const auto loose = four({kGood, "program=ok gpus=0 gemm_gflops=10 link_mbps=41",
                           "program=ok gpus=0 gemm_gflops=8.5 link_mbps=1000",
                           "program=ok gpus=0 gemm_gflops=7.0 link_mbps=1000"},
                          0.5);
  EXPECT_EQ(loose.failed(), std::vector<std::string>{"h2"});
}

TEST(Preflight, AHostShowingFewerGpusThanSlotsFailsInAGpuJob) {
  std::vector<PreflightHost> hosts = {{"a", 8, {}}, {"b", 8, {}}};
  std::vector<preflight::Report> reports;
  for (int lr = 0; lr < 8; ++lr) {
    reports.push_back(probe("a", lr, lr, lr == 0 ? "program=ok gpus=8 gpu_init=ok" : "program=ok"));
    reports.push_back(
        probe("b", 8 + lr, lr, lr == 0 ? "program=ok gpus=7 gpu_init=ok" : "program=ok"));
  }
  const auto v = decide_preflight(hosts, reports, 0.2);
  EXPECT_TRUE(v.gpu_job);
  EXPECT_TRUE(v.rows[0].passed()) << v.rows[0].failure;
  EXPECT_EQ(v.rows[1].failure, "GPUs: 7 visible for 8 slots");
  EXPECT_THAT(preflight_table(v, 0.2)[2], HasSubstr("7/8"));
}

TEST(Preflight, AGpuThatDoesNotInitialiseFailsItsHost) {
  const auto v = four({"program=ok gpus=1 gpu_init=ok", "program=ok gpus=1 gpu_init=ok",
                       "program=ok gpus=1 gpu_init=device%200:%20out%20of%20memory",
                       "program=ok gpus=1 gpu_init=ok"});
  EXPECT_EQ(v.failed(), std::vector<std::string>{"h3"});
  EXPECT_EQ(v.rows[2].failure, "GPU init: device 0: out of memory");
}

// Two hosts of 2 GPUs and two of 4, one probe per GPU: `gemm[h]` is host h's TFLOP/s on each
// of its GPUs, `nccl[h]` its first probe's NCCL fields.
PreflightVerdict gpu_hosts(const std::array<std::vector<std::string>, 4>& gemm,
                           const std::array<std::string, 4>& nccl) {
  std::vector<PreflightHost> hosts;
  std::vector<preflight::Report> reports;
  int rank = 0;
  for (std::size_t h = 0; h < 4; ++h) {
    const std::string name = "g" + std::to_string(h + 1);
    const auto& gpus = gemm[h];
    hosts.push_back({name, static_cast<int>(gpus.size()), {}});
    for (std::size_t lr = 0; lr < gpus.size(); ++lr) {
      std::string rest = "program=ok gemm_gflops=10 gpu_device=" + std::to_string(lr) + " " +
                         gpus[lr] + (lr == 0 ? " link_mbps=1000 " + nccl[h] : "");
      if (lr == 0) rest += " gpus=" + std::to_string(gpus.size()) + " gpu_init=ok";
      reports.push_back(probe(name, rank++, static_cast<int>(lr), rest));
    }
  }
  return decide_preflight(hosts, reports, 0.2);
}

const std::string kFast = "gpu_gemm_tflops=20";

TEST(Preflight, TheSlowestGpuOfAHostIsItsGemmFigureAndFailsItBelowTheMedian) {
  const auto v = gpu_hosts({{{kFast, kFast},
                             {kFast, "gpu_gemm_tflops=12.5"},
                             {kFast, kFast},
                             {kFast, kFast, kFast, kFast}}},
                           {"nccl_gbps=300", "nccl_gbps=300", "nccl_gbps=290", "nccl_gbps=310"});
  EXPECT_TRUE(v.gpu_job);
  EXPECT_EQ(v.gpu_gemm_medians, (std::map<std::string, double>{{"", 20}}));
  EXPECT_EQ(*v.rows[1].gpu_gemm, 12.5);
  EXPECT_EQ(v.failed(), std::vector<std::string>{"g2"});
  EXPECT_EQ(v.rows[1].failure, "GPU GEMM (device 1) 12.5 TFLOP/s, 38 % below the median 20.0");
  const auto table = preflight_table(v, 0.2);
  EXPECT_THAT(table[0], HasSubstr("GPU TFLOP/s  NCCL GB/s"));
  EXPECT_THAT(table[2], HasSubstr("12.50"));
  EXPECT_THAT(table.back(), HasSubstr("GPU GEMM 20.00 TFLOP/s, NCCL allreduce 300.0 GB/s"));
}

// A cluster of two GPU models: each GPU is compared with its own model's median.
TEST(Preflight, GpuMatrixProductsAreComparedAmongHostsOfTheSameModel) {
  const std::string h200 = "gpu_gemm_tflops=20 gpu_model=NVIDIA%20H200";
  const auto a100 = [](const std::string& tflops) {
    return "gpu_gemm_tflops=" + tflops + " gpu_model=NVIDIA%20A100-SXM4-80GB";
  };
  const std::array<std::string, 4> nccl = {"nccl_gbps=300", "nccl_gbps=300", "nccl_gbps=300",
                                           "nccl_gbps=300"};
  const auto mixed = gpu_hosts(
      {{{h200, h200}, {h200, h200}, {a100("10"), a100("10")}, {a100("9.5"), a100("10")}}}, nccl);
  EXPECT_TRUE(mixed.failed().empty()) << mixed.rows[2].failure << mixed.rows[3].failure;
  EXPECT_EQ(mixed.gpu_gemm_medians,
            (std::map<std::string, double>{{"NVIDIA A100-SXM4-80GB", 9.75}, {"NVIDIA H200", 20}}));
  EXPECT_EQ(mixed.rows[3].gpu_model, "NVIDIA A100-SXM4-80GB");
  EXPECT_THAT(preflight_table(mixed, 0.2).back(),
              HasSubstr("GPU GEMM 9.75 TFLOP/s (NVIDIA A100-SXM4-80GB), 20.00 TFLOP/s (NVIDIA "
                        "H200), NCCL allreduce 300.0 GB/s"));
  const auto slow = gpu_hosts(
      {{{h200, h200}, {h200, h200}, {a100("10"), a100("10")}, {a100("10"), a100("6")}}}, nccl);
  EXPECT_EQ(slow.failed(), std::vector<std::string>{"g4"});
  EXPECT_EQ(slow.rows[3].failure,
            "GPU GEMM (device 1, NVIDIA A100-SXM4-80GB) 6.0 TFLOP/s, 25 % below the median 8.0");
}

TEST(Preflight, AHostWhoseNcclAllreduceIsSlowOrWhoseGpusCannotFormACommunicatorFails) {
  const auto v =
      gpu_hosts({{{kFast, kFast}, {kFast, kFast}, {kFast, kFast}, {kFast, kFast}}},
                {"nccl_gbps=300", "nccl_gbps=90",
                 "nccl=ncclCommInitRank%20(rank%200%20of%202):%20unhandled%20system%20error",
                 "nccl_gbps=310"});
  EXPECT_EQ(v.failed(), (std::vector<std::string>{"g2", "g3"}));
  EXPECT_EQ(v.rows[1].failure, "NCCL allreduce 90 GB/s, 70 % below the median 300");
  EXPECT_EQ(v.rows[2].failure, "NCCL: ncclCommInitRank (rank 0 of 2): unhandled system error");
}

TEST(Preflight, NcclFiguresAreComparedAmongHostsOfAsManyGpus) {
  const std::array<std::vector<std::string>, 4> sizes = {
      {{kFast, kFast}, {kFast, kFast}, {kFast, kFast, kFast, kFast}, {kFast, kFast, kFast, kFast}}};
  // Two GPUs give less than four: no host is slow among its like.
  const auto alike =
      gpu_hosts(sizes, {"nccl_gbps=100", "nccl_gbps=95", "nccl_gbps=300", "nccl_gbps=310"});
  EXPECT_TRUE(alike.failed().empty()) << alike.rows[0].failure << alike.rows[1].failure;
  const auto slow =
      gpu_hosts(sizes, {"nccl_gbps=100", "nccl_gbps=50", "nccl_gbps=300", "nccl_gbps=310"});
  EXPECT_EQ(slow.failed(), std::vector<std::string>{"g2"});
  EXPECT_EQ(slow.rows[1].failure, "NCCL allreduce 50.0 GB/s, 33 % below the median 75.0");
}

// The first probe's NCCL error is the cause; the others only lack its id.
TEST(Preflight, TheFirstProbesNcclErrorIsTheOneNamed) {
  std::vector<PreflightHost> hosts = {{"a", 2, {}}};
  const auto v =
      decide_preflight(hosts,
                       {probe("a", 1, 1,
                              "program=ok gemm_gflops=10 " + kFast +
                                  " nccl=no%20NCCL%20id%20from%20the%20host's%20first%20probe"),
                        probe("a", 0, 0,
                              "program=ok gemm_gflops=10 gpus=2 gpu_init=ok " + kFast +
                                  " nccl=ncclGetUniqueId:%20unhandled%20system%20error")},
                       0.2);
  EXPECT_EQ(v.rows[0].failure, "NCCL: ncclGetUniqueId: unhandled system error");
}

TEST(Preflight, AGpuWhoseMatrixProductFailedFailsItsHostAndOneGpuHasNoNcclFigure) {
  const auto v = gpu_hosts({{{kFast, kFast},
                             {kFast, "gpu_gemm=device%201:%20GEMM%20did%20not%20finish"},
                             {kFast, kFast},
                             {kFast, kFast, kFast, kFast}}},
                           {"nccl_gbps=300", "nccl_gbps=300", "nccl_gbps=300", "nccl_gbps=300"});
  EXPECT_EQ(v.failed(), std::vector<std::string>{"g2"});
  EXPECT_EQ(v.rows[1].failure, "GPU GEMM: device 1: GEMM did not finish");
  // A host of one GPU: the communicator formed, and there is nothing to compare.
  const auto one = four({"program=ok gpus=1 gpu_init=ok " + kFast + " nccl=one%20GPU",
                         "program=ok gpus=1 gpu_init=ok " + kFast + " nccl=one%20GPU",
                         "program=ok gpus=1 gpu_init=ok " + kFast + " nccl=one%20GPU",
                         "program=ok gpus=1 gpu_init=ok " + kFast + " nccl=one%20GPU"});
  EXPECT_TRUE(one.failed().empty()) << one.rows[0].failure;
  EXPECT_FALSE(one.nccl_median);
}

// Hosts without GPUs: the allreduce among each host's probes over TCP, compared among hosts of
// as many slots; an error there fails the host, "one slot" does not.
TEST(Preflight, AHostWhoseProbesAllreduceSlowlyOverTcpFailsAmongHostsOfAsManySlots) {
  std::vector<PreflightHost> hosts = {
      {"a", 2, {}}, {"b", 2, {}}, {"c", 2, {}}, {"d", 4, {}}, {"e", 1, {}}};
  const std::map<std::string, std::string> first = {{"a", "host_gbps=2.0"},
                                                    {"b", "host_gbps=1.9"},
                                                    {"c", "host_gbps=0.9"},
                                                    {"d", "host_gbps=0.8"},
                                                    {"e", "host_ring=one%20slot"}};
  std::vector<preflight::Report> reports;
  int rank = 0;
  for (const auto& h : hosts) {
    for (int lr = 0; lr < h.slots; ++lr) {
      reports.push_back(probe(h.name, rank++, lr,
                              "program=ok gpus=0 gemm_gflops=10 link_mbps=1000" +
                                  (lr == 0 ? " " + first.at(h.name) : std::string())));
    }
  }
  const auto v = decide_preflight(hosts, reports, 0.2);
  // d, the only host of 4 slots, has nothing to be compared with; e has no figure.
  EXPECT_EQ(v.failed(), std::vector<std::string>{"c"});
  EXPECT_EQ(v.rows[2].failure, "host allreduce 0.9 GB/s, 53 % below the median 1.9");
  const auto table = preflight_table(v, 0.2);
  EXPECT_THAT(table[0], HasSubstr("host GB/s"));
  EXPECT_THAT(table.back(), HasSubstr("host allreduce 1.40 GB/s"));
  // A ring that could not form fails its host.
  reports[1]["host_ring"] = "connect to rank 0: refused";
  EXPECT_EQ(decide_preflight(hosts, reports, 0.2).rows[0].failure,
            "host allreduce: connect to rank 0: refused");
}

TEST(Preflight, WithoutGpusAnywhereTheGpuCheckIsNotMade) {
  const auto v = four({"program=ok gpus=0 gpu_runtime=no%20CUDA%20runtime", kGood, kGood, kGood});
  EXPECT_FALSE(v.gpu_job);
  EXPECT_TRUE(v.failed().empty());
}

TEST(Preflight, AnUnreachableHostAMissingProgramAndASilentProbeFail) {
  std::vector<PreflightHost> hosts = {
      {"a", 1, {}}, {"b", 1, "connection refused by SSH host b"}, {"c", 2, {}}, {"d", 1, {}}};
  std::vector<preflight::Report> reports = {
      probe("a", 0, 0, kGood),
      probe("c", 1, 0, kGood),  // c's second probe never reported
      probe("d", 3, 0, "program=prog%20is%20not%20on%20PATH%20here gemm_gflops=10"),
  };
  const auto v = decide_preflight(hosts, reports, 0.2);
  EXPECT_TRUE(v.rows[0].passed());
  EXPECT_EQ(v.rows[1].failure, "unreachable: connection refused by SSH host b");
  EXPECT_EQ(v.rows[2].failure, "no report from 1 of its 2 probes");
  EXPECT_EQ(v.rows[3].failure, "program: prog is not on PATH here");
  const auto table = preflight_table(v, 0.2);
  ASSERT_EQ(table.size(), 6u);  // header, 4 hosts, footer
  EXPECT_THAT(table[2], HasSubstr("no    -"));
  EXPECT_THAT(table[4], HasSubstr("missing"));
}

JobSpec two_hosts(int np) {
  JobSpec spec;
  spec.num_proc = np;
  spec.hosts = {HostSpec{"", "a", 2, "-H"}, HostSpec{"", "b", 2, "-H"}};
  spec.command = {"train", "--epochs", "3"};
  return spec;
}

// The plan of a run of `spec` as asked, after `verdict`.
std::optional<RunPlan> after_preflight(const JobSpec& spec, const PreflightVerdict& verdict,
                                       std::string& error) {
  return plan_after_preflight(spec, plan_as_asked(spec), verdict, error);
}

PreflightVerdict b_fails() {
  return decide_preflight({{"a", 2, {}}, {"b", 2, "unreachable"}}, {}, 0.2);
}

TEST(Preflight, AStaticJobFailsNamingTheHostUnlessTheOthersAreEnoughWithExclude) {
  std::string error;
  EXPECT_FALSE(after_preflight(two_hosts(4), b_fails(), error));
  EXPECT_THAT(error, HasSubstr("host a failed its preflight check (no report from 2 of its 2"));
  EXPECT_THAT(error, HasSubstr("so did b; no worker was started (--preflight-exclude"));
  JobSpec spec = two_hosts(2);
  spec.preflight.exclude = true;
  const PreflightVerdict only_b = decide_preflight(
      {{"a", 2, {}}, {"b", 2, "refused"}},
      {probe("a", 0, 0, kGood), probe("a", 1, 1, "program=ok gemm_gflops=10")}, 0.2);
  const auto job = after_preflight(spec, only_b, error);
  ASSERT_TRUE(job);
  ASSERT_EQ(job->hosts.size(), 1u);
  EXPECT_EQ(job->hosts[0].name, "a");
  spec.num_proc = 3;  // more than a's 2 slots
  EXPECT_FALSE(after_preflight(spec, only_b, error));
  EXPECT_THAT(error, HasSubstr("the hosts that passed give 2 slots, fewer than -np 3"));
}

TEST(Preflight, AnElasticJobLeavesTheFailedHostsOutDownToMinNp) {
  JobSpec spec = two_hosts(4);
  spec.elastic.min_np = 2;
  spec.elastic.max_np = 4;
  const PreflightVerdict only_b = decide_preflight(
      {{"a", 2, {}}, {"b", 2, "refused"}},
      {probe("a", 0, 0, kGood), probe("a", 1, 1, "program=ok gemm_gflops=10")}, 0.2);
  std::string error;
  const auto job = after_preflight(spec, only_b, error);
  ASSERT_TRUE(job) << error;
  EXPECT_EQ(job->hosts.size(), 1u);
  EXPECT_EQ(job->num_proc, 2);
  spec.elastic.min_np = 3;
  EXPECT_FALSE(after_preflight(spec, only_b, error));
  EXPECT_THAT(error, HasSubstr("below --min-np 3"));
}

TEST(Preflight, TheProbesJobHasAProbeOnEverySlotAndOutlivesAnUnusableHost) {
  JobSpec spec = two_hosts(4);
  spec.preflight.run = true;
  spec.preflight.timeout = std::chrono::seconds(20);
  spec.timeline = "t.json";
  spec.elastic.spares = 2;
  const JobSpec probes =
      probe_run(spec, plan_as_asked(spec), "/opt/hvdrun/bin/hvdrun-preflight").spec;
  EXPECT_EQ(probes.num_proc, 4);
  EXPECT_EQ(*probes.elastic.min_np, 1);
  EXPECT_EQ(*probes.elastic.max_np, 4);
  EXPECT_EQ(probes.elastic.spares, 0);
  EXPECT_FALSE(probes.timeline);
  EXPECT_FALSE(probes.preflight.run);
  // Half of --preflight-timeout for the connections and the probes' start, half for their run.
  EXPECT_EQ(probes.start_timeout, std::chrono::seconds(10));
  EXPECT_EQ(probes.command,
            (std::vector<std::string>{"/opt/hvdrun/bin/hvdrun-preflight", "--program", "train",
                                      "--timeout-ms", "10000"}));
}

TEST(Preflight, ALinkTransferThatFailedFailsItsHost) {
  const auto v =
      four({kGood, "program=ok gpus=0 gemm_gflops=10 link=cannot%20connect", kGood, kGood});
  EXPECT_EQ(v.failed(), std::vector<std::string>{"h2"});
  EXPECT_EQ(v.rows[1].failure, "link: cannot connect");
  // Alone, a host has no link to measure: that is no failure.
  const auto alone =
      decide_preflight({{"a", 1, {}}}, {probe("a", 0, 0, "program=ok link=one%20host")}, 0.2);
  EXPECT_TRUE(alone.failed().empty());
}

TEST(Preflight, EveryHostTheJobMayUseIsProbed) {
  JobSpec spec = two_hosts(2);  // a:2 holds both ranks
  EXPECT_EQ(probe_run(spec, plan_as_asked(spec), "p").plan.hosts.size(), 1u);
  EXPECT_EQ(probe_run(spec, plan_as_asked(spec), "p").plan.num_proc, 2);
  JobSpec exclude = spec;  // b takes a's ranks if a fails: b is checked too
  exclude.preflight.exclude = true;
  EXPECT_EQ(probe_run(exclude, plan_as_asked(exclude), "p").plan.hosts.size(), 2u);
  EXPECT_EQ(probe_run(exclude, plan_as_asked(exclude), "p").plan.num_proc, 4);
  spec.elastic.min_np = 2;
  spec.elastic.max_np = 2;  // b takes a's place in a cooldown
  EXPECT_EQ(probe_run(spec, plan_as_asked(spec), "p").plan.hosts.size(), 2u);
}

// A probe that dies breaks the others' collectives: only its host fails; the others' errors
// are its doing. Without a dead probe, a probe's error fails its own host.
TEST(Preflight, OnlyTheHostOfAProbeThatDiedFailsWhenTheOthersCollectivesBreak) {
  const std::string broke =
      "program=ok gpus=0 gemm_gflops=10 error=allreduce%20failed:%20rank%202%20closed";
  std::vector<PreflightHost> hosts = {{"a", 1, {}}, {"b", 1, {}}, {"c", 1, {}}};
  const auto v = decide_preflight(hosts, {probe("a", 0, 0, broke), probe("c", 2, 0, broke)}, 0.2);
  EXPECT_EQ(v.failed(), std::vector<std::string>{"b"});
  EXPECT_EQ(v.rows[1].failure, "no report from 1 of its 1 probes");
  const auto alone = decide_preflight(
      hosts, {probe("a", 0, 0, broke), probe("b", 1, 0, kGood), probe("c", 2, 0, kGood)}, 0.2);
  EXPECT_EQ(alone.failed(), std::vector<std::string>{"a"});
  EXPECT_EQ(alone.rows[0].failure, "its probe failed: allreduce failed: rank 2 closed");
}

}  // namespace
}  // namespace hvdrun::launcher
