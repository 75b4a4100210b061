// rethrow_with_prefix / rethrow_with_message keep the error's kind for every kind of
// hvdrun/error.h and leave other exceptions untouched.
#include "worker-runtime/error_context.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace hvdrun {
namespace {

template <class Kind>
void expect_kind_kept() {
  try {
    try {
      throw Kind("peer gone");
    } catch (...) {
      rethrow_with_prefix(std::current_exception(), "allreduce (rank 1): ");
    }
  } catch (const Kind& e) {
    EXPECT_STREQ(e.what(), "allreduce (rank 1): peer gone");
    return;
  } catch (...) {
    ADD_FAILURE() << "the kind was lost";
  }
}

TEST(ErrorContext, PrefixKeepsEveryKind) {
  expect_kind_kept<UsageError>();
  expect_kind_kept<NetworkError>();
  expect_kind_kept<TimeoutError>();
  expect_kind_kept<ProtocolError>();
  expect_kind_kept<WorkerFailedError>();
  expect_kind_kept<BackendError>();
  expect_kind_kept<AbortedError>();
}

TEST(ErrorContext, MessageReplacesTextAndKeepsKind) {
  try {
    try {
      throw AbortedError("aborted");
    } catch (...) {
      rethrow_with_message(std::current_exception(), "broadcast: aborted: rank 2 failed");
    }
  } catch (const AbortedError& e) {
    EXPECT_STREQ(e.what(), "broadcast: aborted: rank 2 failed");
  }
}

TEST(ErrorContext, ForeignExceptionsPassUnchanged) {
  try {
    try {
      throw std::out_of_range("index 9");
    } catch (...) {
      rethrow_with_prefix(std::current_exception(), "ignored: ");
    }
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "index 9");
  }
}

}  // namespace
}  // namespace hvdrun
