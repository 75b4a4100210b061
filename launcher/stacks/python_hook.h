// The Python hook: a sitecustomize.py in a directory of the job's that hvdrun puts first on the
// Python path of its local workers. In a Python worker it registers faulthandler for
// kStacksSignal, writing every thread's Python stack to <dir>/<pid>.py.txt when hvdrun sends
// that signal (it runs in C, so it answers while the interpreter is stuck in a collective),
// then hands over to the sitecustomize that would have run without it. hvdrun sends the signal
// only to a process that installed a handler for it (python_hook_armed()), so programs that
// are not Python never see it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace hvdrun::launcher {

inline constexpr const char* kStacksDirEnv = "HVDRUN_STACKS_DIR";
inline constexpr const char* kStacksSignalEnv = "HVDRUN_STACKS_SIGNAL";
// A real-time signal no library of ours or Python's uses (SIGRTMIN+6 under glibc).
inline constexpr int kStacksSignal = 40;

// Writes <dir>/sitecustomize.py (dir must exist). Throws hvdrun::Error naming the file.
void write_python_hook(const std::filesystem::path& dir);

// A private directory ($TMPDIR/hvdrun-XXXXXX, mode 0700) holding the hook, where the hooked
// workers write their stacks; removed with its contents on destruction. path() is empty when
// it could not be made (the workers then run without Python stacks; error() says why).
class PythonHookDir {
 public:
  PythonHookDir();
  ~PythonHookDir();
  PythonHookDir(const PythonHookDir&) = delete;
  PythonHookDir& operator=(const PythonHookDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  const std::string& error() const noexcept { return error_; }

 private:
  std::filesystem::path path_;
  std::string error_;
};

// The worker's PYTHONPATH with the hook's directory first (`current` may be empty).
std::string hooked_pythonpath(const std::filesystem::path& dir, const std::string& current);

// `overlay` ("NAME=VALUE" entries a node agent lays over its own environment `base`) with the
// hook of `dir`: first on the PYTHONPATH the worker would get (the overlay's, else the base's),
// and the hook's two variables. Unchanged when `dir` is empty (no hook).
std::vector<std::string> with_python_hook(std::vector<std::string> overlay,
                                          const std::vector<std::string>& base,
                                          const std::filesystem::path& dir);

// Whether `pid` has a handler for kStacksSignal (/proc/PID/status, SigCgt).
bool python_hook_armed(pid_t pid);

// Where the hook of process `pid` writes its Python stacks.
std::filesystem::path python_stacks_file(const std::filesystem::path& dir, pid_t pid);

}  // namespace hvdrun::launcher
