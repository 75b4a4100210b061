// The Python hook (python_hook.h).
#include "launcher/stacks/python_hook.h"

#include <stdlib.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "hvdrun/error.h"

namespace hvdrun::launcher {
namespace {

constexpr const char* kHook =
    R"(# Written by hvdrun: on hvdrun's signal, faulthandler writes every thread's Python stack
# to $HVDRUN_STACKS_DIR/<pid>.py.txt (hang forensics); a warm spare of an elastic Horovod job
# waits in its first hvd.init() for its promotion; then the sitecustomize this one hides, if
# any, runs as it would have.
import os as _hvd_os
import sys as _hvd_sys


def _hvdrun_register():
    folder = _hvd_os.environ.get("HVDRUN_STACKS_DIR")
    signo = _hvd_os.environ.get("HVDRUN_STACKS_SIGNAL")
    if not folder or not signo:
        return None
    try:
        import faulthandler
        out = open(_hvd_os.path.join(folder, "%d.py.txt" % _hvd_os.getpid()), "a")
        faulthandler.register(int(signo), file=out, all_threads=True, chain=False)
        return out
    except Exception:
        return None


_hvdrun_stacks_file = _hvdrun_register()


# A warm spare (HVDRUN_SPARE=1) of an elastic Horovod job: its first hvd.init() waits until
# hvdrun promotes it, asking hvdrun's Horovod rendezvous GET /rank_and_size/spare.<HVDRUN_SLOT>
# (held there), then takes the place answered as a new worker takes its place from its
# environment. Told it is not needed, it ends with status 0.
def _hvdrun_wait_for_promotion():
    env = _hvd_os.environ
    import http.client
    key = env.get("HVDRUN_SLOT", "")
    where = (env.get("HOROVOD_GLOO_RENDEZVOUS_ADDR", ""),
             int(env.get("HOROVOD_GLOO_RENDEZVOUS_PORT", "0")))
    while True:
        try:
            conn = http.client.HTTPConnection(where[0], where[1])
            conn.request("GET", "/rank_and_size/spare." + key)
            reply = conn.getresponse()
            status, body = reply.status, reply.read().decode("ascii", "replace")
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            _hvd_sys.stderr.write("hvdrun: spare %s: hvdrun's rendezvous %s:%d is gone (%s)\n"
                                  % (key, where[0], where[1], e))
            _hvd_os._exit(1)
        if status == 503:  # held as long as the rendezvous holds a query: ask again
            continue
        values = body.split(",")
        if status != 200 or len(values) != 6:
            _hvd_sys.stderr.write("hvdrun: spare %s: unexpected answer %d %r from hvdrun's "
                                  "rendezvous\n" % (key, status, body[:200]))
            _hvd_os._exit(1)
        if values[0].strip() == "-1":
            print("hvdrun: spare %s is not needed" % key, flush=True)
            _hvd_sys.exit(0)
        names = ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE")
        for name, value in zip(names, values):
            env["HOROVOD_" + name] = value.strip()
        env.pop("HVDRUN_SPARE", None)  # a worker now: its children are no spares
        return


def _hvdrun_hold_spare():
    if _hvd_os.environ.get("HVDRUN_SPARE") != "1" or _hvd_os.environ.get("HOROVOD_ELASTIC") != "1":
        return
    import importlib.abc
    import importlib.machinery

    def wrap(cls):
        real = cls.init
        waited = []

        def init(self, *args, **kwargs):
            if not waited:
                waited.append(True)
                _hvdrun_wait_for_promotion()
            return real(self, *args, **kwargs)

        cls.init = init

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "horovod.common.basics":
                return None
            _hvd_sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                wrap(module.HorovodBasics)

            spec.loader.exec_module = exec_module
            return spec

    _hvd_sys.meta_path.insert(0, Finder())


_hvdrun_hold_spare()


def _hvdrun_next_sitecustomize():
    here = _hvd_os.path.dirname(_hvd_os.path.abspath(__file__))
    saved = list(_hvd_sys.path)
    mine = _hvd_sys.modules.pop("sitecustomize", None)
    _hvd_sys.path[:] = [p for p in saved if _hvd_os.path.abspath(p or ".") != here]
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        if mine is not None:
            _hvd_sys.modules["sitecustomize"] = mine
    finally:
        _hvd_sys.path[:] = saved


_hvdrun_next_sitecustomize()
)";

}  // namespace

void write_python_hook(const std::filesystem::path& dir) {
  const auto path = dir / "sitecustomize.py";
  std::ofstream out(path);
  out << kHook;
  out.close();
  if (!out) throw Error("cannot write " + path.string());
}

PythonHookDir::PythonHookDir() {
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / "hvdrun-XXXXXX").string();
  if (ec || ::mkdtemp(pattern.data()) == nullptr) {
    error_ = "cannot make a directory like " + pattern;
    return;
  }
  try {
    write_python_hook(pattern);
    path_ = pattern;
  } catch (const Error& e) {
    error_ = e.what();
    std::filesystem::remove_all(pattern, ec);
  }
}

std::string hooked_pythonpath(const std::filesystem::path& dir, const std::string& current) {
  return dir.string() + (current.empty() ? "" : ":" + current);
}

PythonHookDir::~PythonHookDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> with_python_hook(std::vector<std::string> overlay,
                                          const std::vector<std::string>& base,
                                          const std::filesystem::path& dir) {
  if (dir.empty()) return overlay;
  constexpr std::string_view kName = "PYTHONPATH=";
  const auto value_in = [&](const std::vector<std::string>& list) -> std::optional<std::string> {
    for (const auto& entry : list) {
      if (entry.starts_with(kName)) return entry.substr(kName.size());
    }
    return std::nullopt;
  };
  auto path = value_in(overlay);
  if (!path) path = value_in(base);
  std::erase_if(overlay, [&](const std::string& e) { return e.starts_with(kName); });
  overlay.push_back(std::string(kName) + hooked_pythonpath(dir, path.value_or("")));
  overlay.push_back(std::string(kStacksDirEnv) + "=" + dir.string());
  overlay.push_back(std::string(kStacksSignalEnv) + "=" + std::to_string(kStacksSignal));
  return overlay;
}

bool python_hook_armed(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("SigCgt:")) continue;
    unsigned long long mask = 0;
    std::istringstream(line.substr(7)) >> std::hex >> mask;
    return (mask >> (kStacksSignal - 1)) & 1;
  }
  return false;
}

std::filesystem::path python_stacks_file(const std::filesystem::path& dir, pid_t pid) {
  return dir / (std::to_string(pid) + ".py.txt");
}

}  // namespace hvdrun::launcher
