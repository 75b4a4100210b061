// What the preflight probes found, and the verdict on each host, without I/O: the probes'
// report lines (preflight/probe_main.cpp) are read into one row per host; each check passes or
// fails with its figure: the host was reached and its agent started, the program is there, as
// many GPUs as slots (in a job whose hosts show GPUs) and each initialises, NCCL forms a
// communicator across the host's GPUs, and the matrix product (on a core and on each GPU), the
// host's allreduce (NCCL, or TCP without GPUs) and its link are within --preflight-slack of the
// median of all hosts (of the hosts of as many slots for an allreduce, of the hosts of the same
// GPU model for a GPU's matrix product).
// Then the table for the console.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/report_line.h"

namespace hvdrun::launcher {

struct PreflightHost {
  std::string name;
  int slots = 0;
  std::string unreachable;  // why the host could not be used (its agent did not start), if so
};

struct PreflightRow {
  std::string host;
  int slots = 0;
  std::string agent = "ok";    // or why not
  std::string program;         // "ok" or why not
  std::optional<int> gpus;     // visible, from the host's first probe
  std::string gpu_note;        // "7 of 8", "none (no CUDA runtime)", "device 3: ..."
  std::optional<double> gemm;  // GFLOP/s: the best of the host's probes (they share its cores)
  // On its GPUs: the slowest GPU's matrix product (TFLOP/s), which device it was and its model
  // (empty when unknown), and the NCCL allreduce among its probes (bus GB/s), or why not.
  std::optional<double> gpu_gemm;
  int gpu_gemm_device = -1;
  std::string gpu_model;
  std::string gpu_gemm_error;
  std::optional<double> nccl;
  std::string nccl_error;  // "one GPU": the communicator formed, no figure to compare
  // On a host without GPUs: the allreduce among its probes over TCP (bus GB/s), or why not.
  std::optional<double> host_ring;
  std::string host_ring_error;
  std::optional<double> link;  // MB/s out of the host
  std::string link_error;      // why there is no figure ("one host": none was measured)
  std::string probe_error;     // what ended one of its probes early (a collective that broke)
  std::string crash;           // the signal a crash in one of its probes' checks died of
  std::string failure;         // the first check failed: "link 41 MB/s, 96 % below the median
                               // 940"; empty: the host passed
  bool passed() const { return failure.empty(); }
};

struct PreflightVerdict {
  std::vector<PreflightRow> rows;  // in the hosts' order
  std::optional<double> ring_ms;   // a 4 MiB allreduce across all hosts, rank 0's median
  bool gpu_job = false;            // some host shows a GPU: every host must show its slots' worth
  std::optional<double> gemm_median, link_median, nccl_median;
  // By the hosts' slots, where two hosts or more have them: how many take part changes the
  // figures.
  std::map<int, double> nccl_medians, host_ring_medians;
  // By GPU model (the key "" for hosts whose model is unknown): GPU models differ in speed.
  std::map<std::string, double> gpu_gemm_medians;
  std::optional<double> host_ring_median;
  std::vector<std::string> failed() const;  // hosts that failed, in order
};

// `reports`: every probe's fields; `slack`: a host this far below the median (0.2: 20 %) fails.
PreflightVerdict decide_preflight(const std::vector<PreflightHost>& hosts,
                                  const std::vector<preflight::Report>& reports, double slack);

// The table, one line per host (and a header and a footer), for the console.
std::vector<std::string> preflight_table(const PreflightVerdict& verdict, double slack);

}  // namespace hvdrun::launcher
