// The preflight probe's checks of its host, without the network: whether the job's program
// can be run there, the GPUs the CUDA runtime shows (and whether each initialises), and the
// speed of a single-precision matrix product on this core.
#pragma once

#include <chrono>
#include <string>

namespace hvdrun::preflight {

// Where `program` runs from: itself when it names a path (with a '/'), else the first
// executable of that name on `path` (PATH's value). Empty, with `why` set, when none.
std::string find_program(const std::string& program, const std::string& path, std::string& why);

struct GpuCheck {
  int visible = 0;         // devices the CUDA runtime shows (CUDA_VISIBLE_DEVICES applied)
  std::string runtime;     // why none was counted: "no CUDA runtime", the runtime's error; or ""
  std::string init_error;  // "device 3: out of memory" for the first that failed; "" if all did
};
// Counts and initialises the GPUs through the CUDA runtime, loaded at run time (a host without
// one has none).
GpuCheck check_gpus();
// The devices the CUDA runtime shows, without initialising them (0 without a runtime).
int count_gpus();

// GFLOP/s of the fastest of repeated n x n float matrix products for about `budget` (the
// fastest: what the core gives when nothing else holds it).
double gemm_gflops(int n, std::chrono::milliseconds budget);

}  // namespace hvdrun::preflight
