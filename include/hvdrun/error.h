// Error kinds of hvdrun. Library code throws these and never exits; callers catch by kind.
// Header-only, so the launcher and the rendezvous library share it without linking libhvdrun.
#pragma once

#include <stdexcept>
#include <string>

namespace hvdrun {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad flag, host, file or argument given by the user.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Connect, send or receive failed (peer gone, refused, reset).
class NetworkError : public Error {
 public:
  using Error::Error;
};

// A wait passed its deadline; the message names what was waited for and for how long.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer sent something that violates the wire protocol or failed authentication.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

// A worker process of the job failed (launcher side) or a peer rank failed (runtime side).
class WorkerFailedError : public Error {
 public:
  using Error::Error;
};

// A collective backend (TCP ring, NCCL, CUDA) reported an error.
class BackendError : public Error {
 public:
  using Error::Error;
};

// A blocking wait was interrupted from outside (the job's generation broke, or the program
// asked for it): the collective did not complete, and the communicator it ran on is unusable.
class AbortedError : public Error {
 public:
  using Error::Error;
};

}  // namespace hvdrun
