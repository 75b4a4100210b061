// The installed Horovod's build, asked of python3 (horovod_check.h).
#include "launcher/cli/horovod_check.h"

#include <sstream>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/process/run_captured.h"

namespace hvdrun::launcher {
namespace {

// Run as python3 -c SCRIPT MODULE: imports Horovod's extension for one framework and prints
// what it was built with.
constexpr const char* kProbe = R"(import sys
try:
    import horovod
    m = __import__(sys.argv[1], fromlist=['_'])
    b = lambda f: str(int(bool(f())))
    print('version', horovod.__version__)
    print('ops', b(m.mpi_built), b(m.gloo_built), b(m.nccl_built), b(m.ddl_built), b(m.ccl_built))
except BaseException as e:
    print('missing', type(e).__name__, str(e).splitlines()[0] if str(e) else '')
)";

std::string box(bool on) {
  return on ? "    [X] " : "    [ ] ";
}

}  // namespace

HorovodProbe parse_horovod_probe(const std::string& output) {
  HorovodProbe probe;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "version") {
      words >> probe.version;
    } else if (kind == "ops") {
      int m = 0, g = 0, n = 0, d = 0, c = 0;
      if (words >> m >> g >> n >> d >> c) {
        probe.loaded = true;
        probe.mpi = m, probe.gloo = g, probe.nccl = n, probe.ddl = d, probe.ccl = c;
      }
    } else if (kind == "missing") {
      std::getline(words, probe.why);
      if (!probe.why.empty() && probe.why.front() == ' ') probe.why.erase(0, 1);
    }
  }
  if (!probe.loaded && probe.why.empty()) probe.why = "no answer from python3";
  return probe;
}

std::string horovod_build_lines(const HorovodProbe (&probes)[3]) {
  static constexpr const char* kNames[3] = {"TensorFlow", "PyTorch", "MXNet"};
  const HorovodProbe* first = nullptr;
  std::string version;
  for (const auto& p : probes) {
    if (!p.version.empty() && version.empty()) version = p.version;
    if (p.loaded && !first) first = &p;
  }
  std::string text =
      version.empty()
          ? "Horovod: not found (python3 cannot import horovod: " + probes[1].why + "):\n\n"
          : "Horovod v" + version + ":\n\n";
  text += "Available Frameworks:\n";
  for (int i = 0; i < 3; ++i) text += box(probes[i].loaded) + kNames[i] + "\n";
  const HorovodProbe none;
  const HorovodProbe& ops = first ? *first : none;
  text += "\nAvailable Controllers:\n";
  text += box(ops.mpi) + "MPI\n" + box(ops.gloo) + "Gloo\n";
  text += "\nAvailable Tensor Operations:\n";
  text += box(ops.nccl) + "NCCL\n" + box(ops.ddl) + "DDL\n" + box(ops.ccl) + "CCL\n" +
          box(ops.mpi) + "MPI\n" + box(ops.gloo) + "Gloo\n";
  return text;
}

std::string horovod_build_text(const std::map<std::string, std::string>& environment,
                               std::chrono::milliseconds timeout) {
  std::vector<std::string> env;
  for (const auto& [name, value] : environment) env.push_back(name + "=" + value);
  HorovodProbe probes[3];
  const char* modules[3] = {"horovod.tensorflow", "horovod.torch", "horovod.mxnet"};
  for (int i = 0; i < 3; ++i) {
    try {
      const Captured run = run_captured({"python3", "-c", kProbe, modules[i]}, env, timeout);
      probes[i] = parse_horovod_probe(run.out);
      if (run.timed_out) probes[i].why = "python3 did not answer within its time";
      if (!run.end.success() && !probes[i].loaded) probes[i].why = "python3 " + run.end.describe();
    } catch (const Error& e) {
      probes[i].why = e.what();
    }
  }
  return horovod_build_lines(probes);
}

}  // namespace hvdrun::launcher
