// The one error model of the C++ API: every failure is a grove::Error carrying an ErrorCode.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace grove {

/// Outcome codes. Values and meanings mirror NCCL's ncclResult_t so that code written for
/// NCCL reads the same; the C ABI returns them as groveResult_t.
enum class ErrorCode : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,  ///< Reserved for a future CUDA backend.
  kSystemError = 2,         ///< A system call or the operating system failed.
  kInternalError = 3,       ///< A bug in grove: an invariant did not hold.
  kInvalidArgument = 4,     ///< An argument is wrong (null buffer, bad type, root out of range).
  kInvalidUsage = 5,        ///< The call is wrong in context (aborted communicator, mismatch).
  kRemoteError = 6,         ///< Another rank failed; this rank cannot complete the call.
  kInProgress = 7,          ///< An asynchronous operation has not completed yet.
  kTimeout = 8,             ///< A wait passed its deadline.
};

/// NCCL-style short description of a code, e.g. "invalid argument".
std::string_view toString(ErrorCode code);

/// The exception thrown by every grove C++ API call that fails. `what()` names the call,
/// the argument, the rank and what was expected.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

  /// The category of the failure.
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace grove
