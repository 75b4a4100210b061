// AbortSignal (abort_signal.h): an eventfd plus the reason.
#include "worker-runtime/abort_signal.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "hvdrun/error.h"

namespace hvdrun {

AbortSignal::AbortSignal() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_.get() < 0) {
    throw SystemError(
        std::string("cannot create the abort signal: eventfd: ") + std::strerror(errno), "eventfd",
        errno);
  }
}

void AbortSignal::raise(const std::string& reason) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (reason_.empty()) reason_ = reason;
  } catch (...) {  // the reason is only for messages; the signal itself must get through
  }
  raised_.store(true, std::memory_order_release);
  const std::uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(fd_.get(), &one, sizeof one);
  } while (n < 0 && errno == EINTR);
}

void AbortSignal::reset() {
  std::uint64_t count = 0;
  while (::read(fd_.get(), &count, sizeof count) < 0 && errno == EINTR) {
  }
  std::lock_guard lock(mutex_);
  reason_.clear();
  raised_.store(false, std::memory_order_release);
}

std::string AbortSignal::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void AbortSignal::check(const std::string& what) const {
  if (!raised()) return;
  const auto why = reason();
  throw AbortedError(what + ": aborted: " + (why.empty() ? "abort requested" : why));
}

}  // namespace hvdrun
