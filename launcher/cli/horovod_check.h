// What the installed Horovod was built with, in horovodrun --check-build's own lines, so that
// scripts that read them ("[X] NCCL") get Horovod's answer under hvdrun too: python3 (from the
// PATH hvdrun was given) imports each framework's Horovod extension (tensorflow, torch, mxnet)
// in a process of its own, as horovodrun does; the controllers and tensor operations come from
// the first one that loads. Each probe is bounded by `timeout`.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace hvdrun::launcher {

std::string horovod_build_text(const std::map<std::string, std::string>& environment,
                               std::chrono::milliseconds timeout);

// The lines for one framework probe's output ("version V", "ops M G N D C" or "missing WHY"),
// parsed; exposed for tests.
struct HorovodProbe {
  bool loaded = false;
  std::string version;
  bool mpi = false, gloo = false, nccl = false, ddl = false, ccl = false;
  std::string why;  // when not loaded
};
HorovodProbe parse_horovod_probe(const std::string& output);

// The text for the probes of tensorflow, torch and mxnet, in that order.
std::string horovod_build_lines(const HorovodProbe (&probes)[3]);

}  // namespace hvdrun::launcher
