// NcclExtensions::find() (see nccl_extensions.h). The calls are looked up in the very libnccl
// that libhvdrun's own NCCL calls resolve to (found from ncclGetVersion's address), not in the
// process's global scope, where another NCCL (a framework's) may come first or none at all.
#include "worker-runtime/nccl/nccl_extensions.h"

#include <dlfcn.h>

namespace hvdrun::nccl {

NcclExtensions NcclExtensions::find() noexcept {
  NcclExtensions found;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) == 0 || info.dli_fname == nullptr) {
    return found;
  }
  void* library = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (library == nullptr) return found;
  found.shrink = reinterpret_cast<Shrink>(::dlsym(library, "ncclCommShrink"));
  found.revoke = reinterpret_cast<Revoke>(::dlsym(library, "ncclCommRevoke"));
  ::dlclose(library);  // the NOLOAD handle only counts a reference; the library stays loaded
  return found;
}

}  // namespace hvdrun::nccl
