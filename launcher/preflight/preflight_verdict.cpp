// The preflight verdict (preflight_verdict.h).
#include "launcher/preflight/preflight_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hvdrun::launcher {
namespace {

namespace key = preflight::key;

std::optional<double> number(const preflight::Report& r, std::string_view key) {
  const auto it = r.find(key);
  if (it == r.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string field(const preflight::Report& r, std::string_view key) {
  const auto it = r.find(key);
  return it == r.end() ? std::string() : it->second;
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

// The median of `figure` among the hosts of each slot count that two hosts or more have.
std::map<int, double> medians_by_slots(const std::vector<PreflightRow>& rows,
                                       std::optional<double> PreflightRow::*figure) {
  std::map<int, std::vector<double>> groups;
  for (const auto& row : rows) {
    if (row.*figure) groups[row.slots].push_back(*(row.*figure));
  }
  std::map<int, double> medians;
  for (const auto& [slots, figures] : groups) {
    if (figures.size() > 1) medians[slots] = *median(figures);
  }
  return medians;
}

// "link 41 MB/s, 96 % below the median 940"
std::string below_median(const std::string& what, const char* unit, double v, double m) {
  const int digits = m < 100 ? 1 : 0;
  return what + " " + fixed(v, digits) + " " + unit + ", " + fixed(100.0 * (1.0 - v / m), 0) +
         " % below the median " + fixed(m, digits);
}

// "45.10 TFLOP/s (NVIDIA H200)", one such per model, or "-".
std::string gpu_gemm_medians_text(const std::map<std::string, double>& medians) {
  if (medians.empty()) return "-";
  std::string text;
  for (const auto& [model, value] : medians) {
    if (!text.empty()) text += ", ";
    text += fixed(value, 2) + " TFLOP/s" + (model.empty() ? "" : " (" + model + ")");
  }
  return text;
}

}  // namespace

std::vector<std::string> PreflightVerdict::failed() const {
  std::vector<std::string> out;
  for (const auto& row : rows) {
    if (!row.passed()) out.push_back(row.host);
  }
  return out;
}

namespace {

// One probe's report into its host's row (the first probe of the host says the host's own).
void take_report(const preflight::Report& r, PreflightRow& row, PreflightVerdict& verdict) {
  const std::string program = field(r, key::kProgram);
  if (row.program.empty() || row.program == "ok") row.program = program;
  if (const auto g = number(r, key::kGemmGflops))
    row.gemm = row.gemm ? std::max(*row.gemm, *g) : *g;
  if (const auto t = number(r, key::kGpuGemmTflops); t && (!row.gpu_gemm || *t < *row.gpu_gemm)) {
    row.gpu_gemm = *t;  // the slowest GPU: one slow GPU holds back every step of the job
    row.gpu_gemm_device = static_cast<int>(number(r, key::kGpuDevice).value_or(-1));
    row.gpu_model = field(r, key::kGpuModel);
  }
  if (const std::string e = field(r, key::kGpuGemm); !e.empty() && row.gpu_gemm_error.empty()) {
    row.gpu_gemm_error = e;
  }
  if (const std::string e = field(r, key::kHostRing);
      !e.empty() && (row.host_ring_error.empty() || field(r, key::kLocalRank) == "0")) {
    row.host_ring_error = e;
  }
  if (const std::string e = field(r, key::kNccl); !e.empty()) {
    // The first probe's error is the cause (the others then lack its NCCL id); a real error
    // says more than "one GPU".
    if (row.nccl_error.empty() || row.nccl_error == "one GPU" || field(r, key::kLocalRank) == "0") {
      row.nccl_error = e;
    }
  }

  if (field(r, key::kLocalRank) == "0") {
    if (const auto n = number(r, key::kGpus)) row.gpus = static_cast<int>(*n);
    row.link = number(r, key::kLinkMbps);
    row.nccl = number(r, key::kNcclGbps);
    row.host_ring = number(r, key::kHostGbps);
    row.link_error = field(r, key::kLink);
    const std::string init = field(r, key::kGpuInit);
    if (row.gpus && *row.gpus > 0 && init != "ok") row.gpu_note = init;
    if (row.gpus && *row.gpus == 0) row.gpu_note = field(r, key::kGpuRuntime);
  }
  if (const std::string error = field(r, key::kError); !error.empty()) row.probe_error = error;
  if (const std::string crash = field(r, key::kCrashed); !crash.empty()) row.crash = crash;
  if (field(r, key::kRank) == "0") verdict.ring_ms = number(r, key::kRingMs);
}

// The row's first failed check, if none failed before (`reported`: its probes that reported).
void judge(PreflightRow& row, int reported, const PreflightVerdict& verdict, double slack) {
  const auto fail = [&row](std::string why) {
    if (row.failure.empty()) row.failure = std::move(why);
  };
  if (row.agent != "ok") return fail("unreachable: " + row.agent);
  if (!row.crash.empty()) return fail("its checks crashed (" + row.crash + ")");
  if (reported < row.slots) {
    fail("no report from " + std::to_string(row.slots - reported) + " of its " +
         std::to_string(row.slots) + " probes");
  }
  if (!row.program.empty() && row.program != "ok") fail("program: " + row.program);
  if (verdict.gpu_job) {
    const int visible = row.gpus.value_or(0);
    if (visible < row.slots) {
      fail("GPUs: " + std::to_string(visible) + " visible for " + std::to_string(row.slots) +
           " slots");
    } else if (!row.gpu_note.empty()) {
      fail("GPU init: " + row.gpu_note);
    }
    if (!row.nccl_error.empty() && row.nccl_error != "one GPU") fail("NCCL: " + row.nccl_error);
    if (!row.gpu_gemm_error.empty()) fail("GPU GEMM: " + row.gpu_gemm_error);
  }
  const double floor = 1.0 - slack;
  // A GPU is compared with the GPUs of its model.
  if (const auto m = verdict.gpu_gemm_medians.find(row.gpu_model);
      row.gpu_gemm && m != verdict.gpu_gemm_medians.end() && *row.gpu_gemm < floor * m->second) {
    fail(below_median("GPU GEMM (device " + std::to_string(row.gpu_gemm_device) +
                          (row.gpu_model.empty() ? "" : ", " + row.gpu_model) + ")",
                      "TFLOP/s", *row.gpu_gemm, m->second));
  }
  // An allreduce's figure depends on how many take part: hosts are compared with the hosts of
  // as many slots.
  if (const auto m = verdict.nccl_medians.find(row.slots);
      row.nccl && m != verdict.nccl_medians.end() && *row.nccl < floor * m->second) {
    fail(below_median("NCCL allreduce", "GB/s", *row.nccl, m->second));
  }
  if (!row.host_ring_error.empty() && row.host_ring_error != "one slot") {
    fail("host allreduce: " + row.host_ring_error);
  }
  if (const auto m = verdict.host_ring_medians.find(row.slots);
      row.host_ring && m != verdict.host_ring_medians.end() && *row.host_ring < floor * m->second) {
    fail(below_median("host allreduce", "GB/s", *row.host_ring, m->second));
  }
  if (row.gemm && verdict.gemm_median && *row.gemm < floor * *verdict.gemm_median) {
    fail(below_median("GEMM", "GFLOP/s", *row.gemm, *verdict.gemm_median));
  }
  if (!row.link && !row.link_error.empty() && row.link_error != "one host") {
    fail("link: " + row.link_error);
  }
  if (row.link && verdict.link_median && *row.link < floor * *verdict.link_median) {
    fail(below_median("link", "MB/s", *row.link, *verdict.link_median));
  }
}

}  // namespace

PreflightVerdict decide_preflight(const std::vector<PreflightHost>& hosts,
                                  const std::vector<preflight::Report>& reports, double slack) {
  PreflightVerdict verdict;
  std::map<std::string, std::size_t> index;
  for (const auto& h : hosts) {
    index.emplace(h.name, verdict.rows.size());
    PreflightRow row;
    row.host = h.name;
    row.slots = h.slots;
    if (!h.unreachable.empty()) row.agent = h.unreachable;
    verdict.rows.push_back(std::move(row));
  }
  std::vector<int> reported(hosts.size(), 0);
  for (const auto& r : reports) {
    const auto it = index.find(field(r, key::kHost));
    if (it == index.end()) continue;
    ++reported[it->second];
    take_report(r, verdict.rows[it->second], verdict);
  }
  std::vector<double> gemms, links, nccls;
  std::map<std::string, std::vector<double>> gpu_gemms;  // by model
  for (const auto& row : verdict.rows) {
    if (row.gpus && *row.gpus > 0) verdict.gpu_job = true;
    if (row.gemm) gemms.push_back(*row.gemm);
    if (row.link) links.push_back(*row.link);
    if (row.gpu_gemm) gpu_gemms[row.gpu_model].push_back(*row.gpu_gemm);
    if (row.nccl) nccls.push_back(*row.nccl);
  }
  verdict.gemm_median = median(gemms);
  verdict.link_median = links.size() > 1 ? median(links) : std::nullopt;
  for (const auto& [model, figures] : gpu_gemms) {
    verdict.gpu_gemm_medians[model] = *median(figures);
  }
  verdict.nccl_median = nccls.size() > 1 ? median(nccls) : std::nullopt;
  verdict.nccl_medians = medians_by_slots(verdict.rows, &PreflightRow::nccl);
  verdict.host_ring_medians = medians_by_slots(verdict.rows, &PreflightRow::host_ring);
  std::vector<double> host_rings;
  for (const auto& row : verdict.rows) {
    if (row.host_ring) host_rings.push_back(*row.host_ring);
  }
  verdict.host_ring_median = median(host_rings);
  for (std::size_t i = 0; i < verdict.rows.size(); ++i) {
    judge(verdict.rows[i], reported[i], verdict, slack);
  }
  // A probe that died (no report) breaks the collectives of every other probe: their errors
  // are its doing, not their hosts'. Without such a probe, an error is its host's.
  const bool probe_died = std::any_of(verdict.rows.begin(), verdict.rows.end(), [](const auto& r) {
    return r.failure.starts_with("no report from") || !r.crash.empty();
  });
  for (auto& row : verdict.rows) {
    if (row.probe_error.empty() || !row.failure.empty()) continue;
    if (!probe_died) row.failure = "its probe failed: " + row.probe_error;
  }
  return verdict;
}

std::vector<std::string> preflight_table(const PreflightVerdict& verdict, double slack) {
  std::size_t width = 4;
  for (const auto& row : verdict.rows) width = std::max(width, row.host.size());
  const auto pad = [](std::string text, std::size_t n) {
    if (text.size() < n) text.append(n - text.size(), ' ');
    return text;
  };
  std::vector<std::string> lines;
  // The GPU columns, in a job whose hosts show GPUs.
  const auto gpu_columns = [&](const PreflightRow* row) -> std::string {
    if (!verdict.gpu_job) return {};
    if (!row) return pad("GPU TFLOP/s", 13) + pad("NCCL GB/s", 11);
    return pad(row->gpu_gemm ? fixed(*row->gpu_gemm, 2) : "-", 13) +
           pad(row->nccl ? fixed(*row->nccl, 1) : "-", 11);
  };
  // The hosts' allreduce over TCP, in a job where some host has that figure.
  const auto ring_column = [&](const PreflightRow* row) -> std::string {
    if (!verdict.host_ring_median) return {};
    if (!row) return pad("host GB/s", 11);
    return pad(row->host_ring ? fixed(*row->host_ring, 2) : "-", 11);
  };
  lines.push_back("  " + pad("host", width) + "  " + pad("agent", 6) + pad("program", 9) +
                  pad("GPUs", 8) + gpu_columns(nullptr) + pad("GEMM GFLOP/s", 14) +
                  ring_column(nullptr) + pad("link MB/s", 11) + "verdict");
  for (const auto& row : verdict.rows) {
    std::string gpus = "-";
    if (row.gpus && (verdict.gpu_job || *row.gpus > 0)) {
      gpus = std::to_string(*row.gpus) + "/" + std::to_string(row.slots);
    }
    lines.push_back("  " + pad(row.host, width) + "  " + pad(row.agent == "ok" ? "ok" : "no", 6) +
                    pad(row.program.empty()   ? "-"
                        : row.program == "ok" ? "ok"
                                              : "missing",
                        9) +
                    pad(gpus, 8) + gpu_columns(&row) +
                    pad(row.gemm ? fixed(*row.gemm, 2) : "-", 14) + ring_column(&row) +
                    pad(row.link ? fixed(*row.link, 0) : "-", 11) +
                    (row.passed() ? "ok" : "FAIL: " + row.failure));
  }
  std::string footer = "  medians: GEMM " +
                       (verdict.gemm_median ? fixed(*verdict.gemm_median, 2) + " GFLOP/s" : "-") +
                       ", link " +
                       (verdict.link_median ? fixed(*verdict.link_median, 0) + " MB/s" : "-");
  if (verdict.host_ring_median) {
    footer += ", host allreduce " + fixed(*verdict.host_ring_median, 2) + " GB/s";
  }
  if (verdict.gpu_job) {
    footer += ", GPU GEMM " + gpu_gemm_medians_text(verdict.gpu_gemm_medians) +
              ", NCCL allreduce " +
              (verdict.nccl_median ? fixed(*verdict.nccl_median, 1) + " GB/s" : "-");
  }
  footer += "; a host " + fixed(slack * 100, 0) + " % below a median fails (--preflight-slack)";
  if (verdict.ring_ms)
    footer += "; 4 MiB allreduce across all hosts " + fixed(*verdict.ring_ms, 2) + " ms";
  lines.push_back(footer);
  return lines;
}

}  // namespace hvdrun::launcher
