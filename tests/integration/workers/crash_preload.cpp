// A fault for the preflight tests, preloaded (LD_PRELOAD) into one probe: access() of a path
// that names "crash-in-the-checks" dies of SIGSEGV, as a check that crashes in a driver does.
#include <dlfcn.h>
#include <signal.h>

#include <cstring>

extern "C" int access(const char* path, int mode) {
  if (path != nullptr && std::strstr(path, "crash-in-the-checks") != nullptr) ::raise(SIGSEGV);
  using Access = int (*)(const char*, int);
  static const auto real = reinterpret_cast<Access>(::dlsym(RTLD_NEXT, "access"));
  return real(path, mode);
}
