// NcclExtensions::find() (see nccl_extensions.h).
#include "worker-runtime/nccl/nccl_extensions.h"

#include <dlfcn.h>

namespace hvdrun::nccl {

NcclExtensions NcclExtensions::find() noexcept {
  NcclExtensions found;
  found.shrink = reinterpret_cast<Shrink>(::dlsym(RTLD_DEFAULT, "ncclCommShrink"));
  found.revoke = reinterpret_cast<Revoke>(::dlsym(RTLD_DEFAULT, "ncclCommRevoke"));
  return found;
}

}  // namespace hvdrun::nccl
