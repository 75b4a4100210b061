// Error kinds of hvdrun. Library code throws these and never exits; callers catch by kind.
// Header-only, so the launcher and the rendezvous library share it without linking libhvdrun.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "hvdrun/export.h"

namespace hvdrun {

class HVDRUN_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // Throws an error of this same kind whose message is `message`: how a layer adds who or
  // where to an error without changing the kind callers catch.
  [[noreturn]] virtual void rethrow_as(std::string message) const {
    throw Error(std::move(message));
  }
  // Whether an elastic job may go on after this failure in its next generation: a failure of
  // the generation (a peer died, a connection broke, a wait timed out, the launcher ended the
  // generation), not of this worker's own program or system.
  virtual bool generation_failure() const noexcept { return false; }
};

// Base of every kind below: Self's rethrow_as throws a Self.
template <class Self>
class HVDRUN_API ErrorKind : public Error {
 public:
  using Error::Error;
  [[noreturn]] void rethrow_as(std::string message) const override {
    throw Self(std::move(message));
  }
};

// Bad flag, host, file or argument given by the user.
class HVDRUN_API UsageError : public ErrorKind<UsageError> {
 public:
  using ErrorKind::ErrorKind;
};

// Connect, send or receive failed (peer gone, refused, reset).
class HVDRUN_API NetworkError : public ErrorKind<NetworkError> {
 public:
  using ErrorKind::ErrorKind;
  bool generation_failure() const noexcept override { return true; }
};

// A wait passed its deadline; the message names what was waited for and for how long.
class HVDRUN_API TimeoutError : public ErrorKind<TimeoutError> {
 public:
  using ErrorKind::ErrorKind;
  bool generation_failure() const noexcept override { return true; }
};

// A peer sent something that violates the wire protocol or failed authentication.
class HVDRUN_API ProtocolError : public ErrorKind<ProtocolError> {
 public:
  using ErrorKind::ErrorKind;
};

// A worker process of the job failed (launcher side) or a peer rank failed (runtime side).
class HVDRUN_API WorkerFailedError : public ErrorKind<WorkerFailedError> {
 public:
  using ErrorKind::ErrorKind;
  bool generation_failure() const noexcept override { return true; }
};

// An elastic job's next generation leaves this worker out (its slot was removed from the
// job): the worker's part is over, and the program should end (elastic::run throws it).
class HVDRUN_API NotMemberError : public ErrorKind<NotMemberError> {
 public:
  using ErrorKind::ErrorKind;
};

// Ranks called collectives that do not match (kind, data type, operation, count, root, or one
// call more on one rank): the message names both sides. The communicator is unusable after it.
class HVDRUN_API MismatchError : public ErrorKind<MismatchError> {
 public:
  using ErrorKind::ErrorKind;
};

// A collective backend (TCP ring, NCCL, CUDA) reported an error.
class HVDRUN_API BackendError : public ErrorKind<BackendError> {
 public:
  using ErrorKind::ErrorKind;
  bool generation_failure() const noexcept override { return true; }
};

// A blocking wait was interrupted from outside (the job's generation broke, or the program
// asked for it): the collective did not complete, and the communicator it ran on is unusable.
class HVDRUN_API AbortedError : public ErrorKind<AbortedError> {
 public:
  using ErrorKind::ErrorKind;
  bool generation_failure() const noexcept override { return true; }
};

// A system call failed: the message says what was being done; syscall() and error_number()
// (errno) say which call and why.
class HVDRUN_API SystemError : public Error {
 public:
  SystemError(std::string message, std::string syscall, int error_number)
      : Error(std::move(message)), syscall_(std::move(syscall)), errno_(error_number) {}
  const std::string& syscall() const noexcept { return syscall_; }
  int error_number() const noexcept { return errno_; }
  [[noreturn]] void rethrow_as(std::string message) const override {
    throw SystemError(std::move(message), syscall_, errno_);
  }

 private:
  std::string syscall_;
  int errno_;
};

}  // namespace hvdrun
