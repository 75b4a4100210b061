// Adding context to an error on its way up without changing its kind (Error::rethrow_as), so
// that callers who catch by kind (NetworkError, TimeoutError, ...) still can after a layer
// adds who/where.
#pragma once

#include <exception>
#include <string>

#include "hvdrun/error.h"

namespace hvdrun {

// Throws an error of the same kind as `error` with `message`. Anything that is not an
// hvdrun::Error is rethrown unchanged.
[[noreturn]] inline void rethrow_with_message(std::exception_ptr error,
                                              const std::string& message) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    e.rethrow_as(message);
  }
  std::terminate();  // not reached: both paths above throw
}

// Throws an error of the same kind as `error` whose message is prefix + what().
[[noreturn]] inline void rethrow_with_prefix(std::exception_ptr error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    e.rethrow_as(prefix + e.what());
  }
  std::terminate();  // not reached: both paths above throw
}

}  // namespace hvdrun
