// Rethrowing an hvdrun::Error as the same kind with context prepended, so that callers who
// catch by kind (NetworkError, TimeoutError, ...) still can after a layer adds who/where.
#pragma once

#include <exception>
#include <string>

#include "hvdrun/error.h"

namespace hvdrun {

// Throws an error of the same kind as `error` (an hvdrun::Error subclass) with message
// `message`. Anything else is rethrown unchanged.
[[noreturn]] inline void rethrow_with_message(std::exception_ptr error,
                                              const std::string& message) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError&) {
    throw UsageError(message);
  } catch (const NetworkError&) {
    throw NetworkError(message);
  } catch (const TimeoutError&) {
    throw TimeoutError(message);
  } catch (const ProtocolError&) {
    throw ProtocolError(message);
  } catch (const WorkerFailedError&) {
    throw WorkerFailedError(message);
  } catch (const BackendError&) {
    throw BackendError(message);
  } catch (const Error&) {
    throw Error(message);
  }
}

// Throws a copy of `error` (an hvdrun::Error subclass) whose message is prefix + what().
// Anything else is rethrown unchanged.
[[noreturn]] inline void rethrow_with_prefix(std::exception_ptr error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    rethrow_with_message(error, prefix + e.what());
  }
}

}  // namespace hvdrun
