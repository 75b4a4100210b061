// SignalsBlocked: every signal blocked in the calling thread for a scope, for fork(). A
// child forked in that scope starts with every signal blocked, so a handler it inherited
// (Asio's, which writes to a pipe the launcher reads) cannot run in it before it resets its
// dispositions; a signal sent to it meanwhile stays pending until it sets its own mask.
#pragma once

#include <signal.h>

namespace hvdrun::launcher {

class SignalsBlocked {
 public:
  SignalsBlocked() noexcept {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous_);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace hvdrun::launcher
