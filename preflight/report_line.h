// A preflight probe's report line, as the probe (probe_main.cpp) writes it on its stdout and
// hvdrun reads it (launcher/preflight/preflight_verdict.h): "HVDRUN_PREFLIGHT key=value ...",
// the values percent-encoded. Its keys are named here once for both.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace hvdrun::preflight {

// What starts a report line.
inline constexpr std::string_view kReportMarker = "HVDRUN_PREFLIGHT ";

namespace key {
inline constexpr std::string_view kHost = "host";               // HVDRUN_HOSTNAME
inline constexpr std::string_view kRank = "rank";               // once it joined
inline constexpr std::string_view kLocalRank = "local_rank";    //
inline constexpr std::string_view kProgram = "program";         // ok, or why the program fails
inline constexpr std::string_view kGpus = "gpus";               // GPUs the host shows
inline constexpr std::string_view kGpuRuntime = "gpu_runtime";  // the CUDA runtime, or why none
inline constexpr std::string_view kGpuInit = "gpu_init";        // ok, or why the GPUs fail
inline constexpr std::string_view kGemmGflops = "gemm_gflops";  // the CPU's matrix product
inline constexpr std::string_view kGpuDevice = "gpu_device";    // the GPU this probe checked
inline constexpr std::string_view kGpuGemm = "gpu_gemm";        // why its matrix product failed
inline constexpr std::string_view kGpuGemmTflops = "gpu_gemm_tflops";
inline constexpr std::string_view kGpuModel = "gpu_model";
inline constexpr std::string_view kNcclGbps = "nccl_gbps";  // NCCL across the host's GPUs
inline constexpr std::string_view kNccl = "nccl";           // why NCCL failed
inline constexpr std::string_view kHostGbps = "host_gbps";  // the host's ring over TCP
inline constexpr std::string_view kHostRing = "host_ring";  // why it failed
inline constexpr std::string_view kLinkMbps = "link_mbps";  // to the next host
inline constexpr std::string_view kLink = "link";           // why the link test failed
inline constexpr std::string_view kRingMs = "ring_ms";      // the allreduce of every probe
inline constexpr std::string_view kError = "error";         // why it could not join the others
inline constexpr std::string_view kCrashed = "crashed";     // the signal its checks died of
}  // namespace key

// " key=value": '%', ' ', '=', tab and newline in `value` as %XX; an empty value as "-".
std::string report_field(std::string_view key, std::string_view value);
// A report's fields by key, the values decoded.
using Report = std::map<std::string, std::string, std::less<>>;
// A report line read into its fields; empty when `line` is not one.
Report read_report(std::string_view line);

}  // namespace hvdrun::preflight
