// hvdrun-preflight: the probe hvdrun --preflight runs on every slot of the job's hosts, through
// the same launch path as the job (local processes, node agents). It checks its host (the
// job's program, the GPUs), joins the probes' rendezvous with libhvdrun, measures a matrix
// product on its core, its host's link (first worker of each host) and an allreduce across all
// hosts (rank 0), and prints one report line that hvdrun reads:
//   HVDRUN_PREFLIGHT host=H rank=R local_rank=L program=ok|<why> gpus=N gpu_runtime=<why>
//     gpu_init=ok|<why> gemm_gflops=F gpu_device=D gpu_gemm_tflops=F gpu_gemm=<why> gpu_model=M
//     nccl_gbps=F nccl=<why> host_gbps=F host_ring=<why> link_mbps=F link=<why> ring_ms=F
// On a host with GPUs, each probe also times a matrix product on its GPU, and the host's probes
// form an NCCL communicator and time an allreduce among themselves; on a host without GPUs, the
// host's probes time an allreduce among themselves over TCP.
// (values percent-encoded). It exits 0 whatever it found (what failed is in the report), but 3
// when it could not join the others (the report then has error=<why>).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "hvdrun/hvdrun.h"
#include "preflight/checks_child.h"
#include "preflight/gpu_checks.h"
#include "preflight/host_ring.h"
#include "preflight/link_test.h"
#include "preflight/probe_checks.h"
#include "preflight/report_line.h"

namespace {

namespace key = hvdrun::preflight::key;
using hvdrun::preflight::kReportMarker;
using hvdrun::preflight::report_field;

using hvdrun::preflight::Nonce;
using std::chrono::milliseconds;

struct Settings {
  std::string program;
  std::size_t link_bytes = 256u << 20;  // at most, per transfer
  milliseconds link_time{150};          // per transfer
  milliseconds gemm{300};
  milliseconds timeout{20000};
};

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--program") {
      s.program = argv[i + 1];
    } else if (flag == "--link-mib") {
      s.link_bytes = static_cast<std::size_t>(std::max(1L, value)) << 20;
    } else if (flag == "--gemm-ms") {
      s.gemm = milliseconds(std::max(10L, value));
    } else if (flag == "--timeout-ms") {
      s.timeout = milliseconds(std::max(100L, value));
    } else {
      std::fprintf(stderr, "hvdrun-preflight: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return s;
}

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// One record per rank for the link test: the first worker of each host says where it listens.
struct Endpoint {
  char address[48] = {};
  std::uint16_t port = 0;
};

// The host ring's link test; returns the figure (MB/s) or -1 with `why`.
double link_test(const Settings& s, std::string& why) {
  const bool leader = hvdrun::local_rank() == 0;
  std::optional<hvdrun::preflight::LinkReceiver> receiver;
  Endpoint mine;
  if (leader) {
    const std::string rendezvous = env_or("HVDRUN_RENDEZVOUS_ADDR", "127.0.0.1");
    const std::string address =
        hvdrun::preflight::address_towards(rendezvous.substr(0, rendezvous.rfind(':')));
    receiver.emplace(address);
    std::snprintf(mine.address, sizeof mine.address, "%s", address.c_str());
    mine.port = receiver->port();
  }
  std::vector<std::byte> gathered;
  hvdrun::allgather(&mine, sizeof mine, hvdrun::DataType::kUInt8, gathered);
  std::vector<Endpoint> all(gathered.size() / sizeof(Endpoint));
  std::memcpy(all.data(), gathered.data(), all.size() * sizeof(Endpoint));
  Nonce nonce{};
  if (hvdrun::rank() == 0) {
    std::random_device random;
    for (auto& b : nonce) b = static_cast<std::uint8_t>(random());
  }
  hvdrun::broadcast(nonce.data(), nonce.size(), hvdrun::DataType::kUInt8, 0);
  std::vector<int> leaders;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[static_cast<std::size_t>(r)].port != 0) leaders.push_back(r);
  }
  // Hosts send in turns, so that none sends while it receives (its own bulk would hold back
  // the acknowledgements of what it receives): even ring places first, then odd ones, then the
  // last place of an odd ring.
  const auto hosts = leaders.size();
  const auto me = static_cast<std::size_t>(
      std::find(leaders.begin(), leaders.end(), hvdrun::rank()) - leaders.begin());
  const auto turn_of = [hosts](std::size_t place) {
    return hosts % 2 == 1 && place == hosts - 1 ? 2 : static_cast<int>(place % 2);
  };
  double figure = -1;
  if (leader && hosts < 2) why = "one host";
  if (leader && mine.port == 0) {  // this host takes no part: the others go round without it
    why = "cannot listen for the previous host's transfer";
    for (int turn = 0; turn < 9 && hosts > 1; ++turn) hvdrun::barrier();
    return figure;
  }
  // Each transfer's waits: its own time and a margin, not the whole preflight's.
  const auto bound = std::min(s.timeout, s.link_time + milliseconds(5000));
  // Three rounds; the best transfer counts (a busy core on either side slows one, not all).
  for (int turn = 0; turn < 9 && hosts > 1; ++turn) {
    if (leader && turn_of(me) == turn % 3) {
      const Endpoint& next = all[static_cast<std::size_t>(leaders[(me + 1) % hosts])];
      if (const auto mbps = hvdrun::preflight::send_to_next(
              next.address, next.port, nonce, s.link_bytes, s.link_time, bound, why)) {
        figure = std::max(figure, *mbps);
      }
    } else if (leader && turn_of((me + hosts - 1) % hosts) == turn % 3) {
      std::string receive_why;
      receiver->receive(nonce, bound, receive_why);
    }
    hvdrun::barrier();
  }
  return figure;
}

// One record per rank for the GPU checks: the first probe of a host with GPUs gives its NCCL id.
struct NcclIdRecord {
  char host[128] = {};
  std::int32_t has_id = 0;
  hvdrun::preflight::NcclId id{};
};

std::string figure_text(double value, int digits) {
  char number[64];
  std::snprintf(number, sizeof number, "%.*f", digits, value);
  return number;
}

// The GPU checks of this probe (`gpus`: what its host shows) as report fields. Every probe
// takes part in the exchange of the hosts' NCCL ids, GPUs or not.
std::string gpu_checks(const Settings& s, int gpus) {
  namespace pf = hvdrun::preflight;
  const bool checked = gpus > 0 && pf::gpu_checks_built();
  // HVDRUN_GPU_DEVICE pins every probe of the host to one device: NCCL cannot put two ranks
  // of a communicator on one GPU, so the host's NCCL check is made only for a single probe.
  const char* pinned = std::getenv("HVDRUN_GPU_DEVICE");
  const bool is_pinned = pinned && *pinned;
  const bool nccl_fits = hvdrun::local_size() <= gpus &&  // else the GPU count check fails
                         (!is_pinned || hvdrun::local_size() == 1);
  NcclIdRecord mine;
  std::snprintf(mine.host, sizeof mine.host, "%s", env_or("HVDRUN_HOSTNAME", "-").c_str());
  std::string nccl_why;
  if (checked && nccl_fits && hvdrun::local_rank() == 0) {
    if (const auto id = pf::new_nccl_id(nccl_why)) {
      mine.has_id = 1;
      mine.id = *id;
    }
  }
  std::vector<std::byte> gathered;
  hvdrun::allgather(&mine, sizeof mine, hvdrun::DataType::kUInt8, gathered);
  if (!checked) return {};
  std::vector<NcclIdRecord> all(gathered.size() / sizeof(NcclIdRecord));
  std::memcpy(all.data(), gathered.data(), all.size() * sizeof(NcclIdRecord));
  int device = hvdrun::local_rank() % gpus;
  if (is_pinned) {
    char* end = nullptr;
    const long value = std::strtol(pinned, &end, 10);
    if (*end != '\0' || value < 0 || value >= gpus) {
      return report_field(key::kGpuGemm, "HVDRUN_GPU_DEVICE=" + std::string(pinned) + " but " +
                                             std::to_string(gpus) + " GPUs are visible");
    }
    device = static_cast<int>(value);
  }
  // All GPU checks together: a third of the whole preflight's time, 20 s at most.
  const auto deadline =
      std::chrono::steady_clock::now() + std::min(s.timeout / 3, milliseconds(20000));
  const auto left = [&deadline] {
    return std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(
                                         deadline - std::chrono::steady_clock::now()));
  };
  std::string out = report_field(key::kGpuDevice, std::to_string(device));
  const auto gemm = pf::gpu_gemm_tflops(device, s.gemm, left());
  out += gemm.value ? report_field(key::kGpuGemmTflops, figure_text(*gemm.value, 2))
                    : report_field(key::kGpuGemm, gemm.error);
  if (const std::string model = pf::gpu_model(device); !model.empty()) {
    out += report_field(key::kGpuModel, model);
  }
  const auto host = std::find_if(all.begin(), all.end(), [&](const NcclIdRecord& r) {
    return r.has_id && std::strncmp(r.host, mine.host, sizeof r.host) == 0;
  });
  if (host != all.end()) {
    const auto nccl = pf::host_allreduce_gbps(device, host->id, hvdrun::local_rank(),
                                              hvdrun::local_size(), left());
    if (!nccl.value) {
      nccl_why = nccl.error;
    } else if (hvdrun::local_size() == 1) {
      nccl_why = "one GPU";  // the communicator formed; a figure needs two
    } else if (hvdrun::local_rank() == 0) {
      out += report_field(key::kNcclGbps, figure_text(*nccl.value, 1));
    }
  } else if (nccl_fits && nccl_why.empty()) {
    nccl_why = "no NCCL id from the host's first probe";
  }
  if (!nccl_why.empty()) out += report_field(key::kNccl, nccl_why);
  return out;
}

// One record per rank for the host ring: its host, local rank and listener.
struct RingRecord {
  char host[128] = {};
  std::int32_t local_rank = 0;
  std::uint16_t port = 0;  // 0: it takes no part
  std::uint16_t unused = 0;
};

// Each host's ring runs for a third of the matrix product's time: hosts take up to 4 turns.
milliseconds ring_budget(const Settings& s) {
  return std::max(milliseconds(30), s.gemm / 3);
}

// This host's ring: its probes' allreduce over TCP, as report fields (`why`: what kept this
// probe from it so far).
std::string run_host_ring(const Settings& s, const RingRecord& mine,
                          const std::vector<RingRecord>& all, hvdrun::tcp::Listener listener,
                          const std::string& secret, std::string why) {
  namespace pf = hvdrun::preflight;
  std::vector<pf::RingPeer> peers;
  bool complete = true;  // every probe of the host listens: else none forms the ring
  for (const auto& r : all) {
    if (std::strncmp(r.host, mine.host, sizeof r.host) != 0) continue;
    if (r.port == 0) complete = false;
    peers.push_back({r.local_rank, r.port});
  }
  if (complete) {
    const auto bound = std::min(s.timeout / 3, milliseconds(20000));
    const auto figure = pf::host_ring_allreduce(hvdrun::local_rank(), peers, std::move(listener),
                                                secret, ring_budget(s), bound);
    if (figure.gbps && hvdrun::local_rank() == 0) {
      return report_field(key::kHostGbps, figure_text(*figure.gbps, 2));
    }
    if (!figure.gbps) why = figure.error;
  } else if (why.empty()) {
    why = "a probe of this host cannot listen on loopback";
  }
  return why.empty() ? std::string() : report_field(key::kHostRing, why);
}

// The allreduce among this host's probes over TCP, as report fields: on hosts without GPUs
// (those with GPUs have NCCL's, in builds that have it), of two slots or more. `shown`: the
// GPUs the host shows, the same for all its probes. Every probe takes part in the exchange.
std::string host_ring_check(const Settings& s, int shown) {
  namespace pf = hvdrun::preflight;
  const bool checked = hvdrun::local_size() >= 2 && !(shown > 0 && pf::gpu_checks_built());
  RingRecord mine;
  std::snprintf(mine.host, sizeof mine.host, "%s", env_or("HVDRUN_HOSTNAME", "-").c_str());
  mine.local_rank = hvdrun::local_rank();
  hvdrun::tcp::Listener listener;
  std::string why;
  if (checked) {
    try {
      listener = hvdrun::tcp::Listener::bind("127.0.0.1", 0);
      mine.port = listener.port();
    } catch (const std::exception& e) {
      why = std::string("cannot listen on loopback: ") + e.what();
    }
  }
  std::array<char, 33> secret{};  // hex, from rank 0
  if (hvdrun::rank() == 0) {
    std::random_device random;
    for (std::size_t i = 0; i + 1 < secret.size(); ++i)
      secret[i] = "0123456789abcdef"[random() % 16];
  }
  hvdrun::broadcast(secret.data(), secret.size(), hvdrun::DataType::kUInt8, 0);
  std::vector<std::byte> gathered;
  hvdrun::allgather(&mine, sizeof mine, hvdrun::DataType::kUInt8, gathered);
  std::vector<RingRecord> all(gathered.size() / sizeof(RingRecord));
  std::memcpy(all.data(), gathered.data(), all.size() * sizeof(RingRecord));
  // Hosts take turns, in up to 4 rounds: hosts that share cores (test hosts, or pods on one
  // node) would slow each other's rings. Every probe passes each round's barrier.
  std::vector<std::string> hosts;  // in rank order
  for (const auto& r : all) {
    const std::string name(r.host, strnlen(r.host, sizeof r.host));
    if (std::find(hosts.begin(), hosts.end(), name) == hosts.end()) hosts.push_back(name);
  }
  const std::size_t rounds = std::min<std::size_t>(std::max<std::size_t>(hosts.size(), 1), 4);
  const auto place = static_cast<std::size_t>(
      std::find(hosts.begin(), hosts.end(), std::string(mine.host)) - hosts.begin());
  std::string out;
  for (std::size_t round = 0; round < rounds; ++round) {
    if (checked && place % rounds == round)
      out = run_host_ring(s, mine, all, std::move(listener), std::string(secret.data()), why);
    hvdrun::barrier();
  }
  return out;
}

double ring_ms() {
  std::vector<float> data(1u << 20, 1.0f);  // 4 MiB
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    hvdrun::allreduce(std::span<float>(data), hvdrun::ReduceOp::kSum);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

int run_checks(const Settings& s) {
  std::string program_why;
  const bool program_ok =
      !s.program.empty() &&
      !hvdrun::preflight::find_program(s.program, env_or("PATH", ""), program_why).empty();
  if (s.program.empty()) program_why = "no --program";
  std::string report = std::string(kReportMarker.substr(0, kReportMarker.size() - 1)) +
                       report_field(key::kHost, env_or("HVDRUN_HOSTNAME", ""));
  // The probes' own collectives go over TCP: the GPU checks name what fails on a GPU, where a
  // world NCCL communicator would only fail the probes' start.
  ::setenv("HVDRUN_BACKEND", "cpu", 1);
  // A collective that waits for a probe that hangs ends within half the preflight's time: the
  // others report, and hvdrun stops the one that hangs at the limit.
  const auto collective_s = std::max<long long>(1, s.timeout.count() / 2000);
  ::setenv("HVDRUN_TIMEOUT", std::to_string(collective_s).c_str(), 1);
  // Joining waits as long, not for the whole run: a probe that never joins (it hangs before)
  // keeps the others from their collectives only, and they report before hvdrun's limit.
  ::setenv("HVDRUN_START_TIMEOUT", std::to_string(collective_s).c_str(), 1);
  // This host's own checks first, before joining the others: a probe that cannot join (another
  // hangs, or died) still reports them.
  const std::string local_rank = env_or("LOCAL_RANK", "0");
  report += report_field(key::kLocalRank, local_rank);
  report += report_field(key::kProgram, program_ok ? std::string("ok") : program_why);
  int visible = 0, shown = 0;  // GPUs usable here; GPUs the host shows
  if (local_rank == "0") {
    const auto gpus = hvdrun::preflight::check_gpus();
    visible = gpus.init_error.empty() ? gpus.visible : 0;
    shown = gpus.visible;
    report += report_field(key::kGpus, std::to_string(gpus.visible)) +
              report_field(key::kGpuRuntime, gpus.runtime) +
              report_field(key::kGpuInit, gpus.init_error.empty() ? "ok" : gpus.init_error);
  } else {
    visible = shown = hvdrun::preflight::count_gpus();
  }
  char number[64];
  std::snprintf(number, sizeof number, "%.2f", hvdrun::preflight::gemm_gflops(192, s.gemm));
  report += report_field(key::kGemmGflops, number);
  try {
    hvdrun::InitGuard hvd;
    report += report_field(key::kRank, std::to_string(hvdrun::rank()));
    report += gpu_checks(s, visible);
    report += host_ring_check(s, shown);
    std::string link_why;
    const double link = link_test(s, link_why);
    if (hvdrun::local_rank() == 0) {
      std::snprintf(number, sizeof number, "%.1f", link);
      report +=
          report_field(key::kLinkMbps, link < 0 ? "" : number) + report_field(key::kLink, link_why);
    }
    const double ring = ring_ms();
    if (hvdrun::rank() == 0) {
      std::snprintf(number, sizeof number, "%.2f", ring);
      report += report_field(key::kRingMs, number);
    }
  } catch (const std::exception& e) {
    report += report_field(key::kError, e.what());
    std::printf("%s\n", report.c_str());
    std::fflush(stdout);
    return 3;  // the other probes go on without this one
  }
  std::printf("%s\n", report.c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  // A crash in the checks (a GPU driver's) is reported at once, naming its signal.
  const std::string report = std::string(kReportMarker.substr(0, kReportMarker.size() - 1)) +
                             report_field(key::kHost, env_or("HVDRUN_HOSTNAME", "")) +
                             report_field(key::kLocalRank, env_or("LOCAL_RANK", ""));
  return hvdrun::preflight::run_checks_in_child([&s] { return run_checks(s); }, report);
}
