// Interrupted: a signal ended hvdrun before its job started (while it waited for a discovery
// script's first hosts). hvdrun then exits 128 + the signal's number, as it does when a signal
// ends a running job and as a shell reports a process the signal killed.
#pragma once

#include <string>
#include <utility>

#include "hvdrun/error.h"

namespace hvdrun::launcher {

class Interrupted : public Error {
 public:
  Interrupted(int signo, std::string message) : Error(std::move(message)), signo_(signo) {}
  [[noreturn]] void rethrow_as(std::string message) const override {
    throw Interrupted(signo_, std::move(message));
  }
  int signo() const noexcept { return signo_; }

 private:
  int signo_;
};

}  // namespace hvdrun::launcher
