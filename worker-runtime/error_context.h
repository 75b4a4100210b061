// Rethrowing an hvdrun::Error as the same kind with context prepended, so that callers who
// catch by kind (NetworkError, TimeoutError, ...) still can after a layer adds who/where.
#pragma once

#include <exception>
#include <string>

#include "hvdrun/error.h"

namespace hvdrun {

// Throws a copy of `error` (an hvdrun::Error subclass) whose message is prefix + what().
// Anything else is rethrown unchanged.
[[noreturn]] inline void rethrow_with_prefix(std::exception_ptr error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    throw UsageError(prefix + e.what());
  } catch (const NetworkError& e) {
    throw NetworkError(prefix + e.what());
  } catch (const TimeoutError& e) {
    throw TimeoutError(prefix + e.what());
  } catch (const ProtocolError& e) {
    throw ProtocolError(prefix + e.what());
  } catch (const WorkerFailedError& e) {
    throw WorkerFailedError(prefix + e.what());
  } catch (const BackendError& e) {
    throw BackendError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

}  // namespace hvdrun
