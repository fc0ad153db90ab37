// The C ABI, part one: errors, version, communicator life cycle and groups (grove.h). Making
// communicators is in c_api_init.cpp, the collectives in c_api_collectives.cpp.
//
// Groups follow NCCL: groveGroupStart/End nest through a per-thread depth; inside a group a
// call on a communicator opens that communicator's C++ group the first time the group
// touches it, and the C++ API queues the call. The outermost groveGroupEnd ends every touched
// communicator's group with groupEndAsync() and drives all the returned Requests round-robin
// from this one thread (without ever sleeping on one of them). That is what lets one thread run
// every rank of a groveCommInitAll, and a ring of send/recv pairs, without deadlock.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/c_api_internal.hpp"
#include "core/config.hpp"
#include "grove/memory.hpp"
#include "grove/types.hpp"
#include "grove/version.hpp"

namespace grove::capi {
namespace {

static_assert(static_cast<int>(groveSuccess) == static_cast<int>(ErrorCode::kSuccess));
static_assert(static_cast<int>(groveUnhandledCudaError) ==
              static_cast<int>(ErrorCode::kUnhandledCudaError));
static_assert(static_cast<int>(groveSystemError) == static_cast<int>(ErrorCode::kSystemError));
static_assert(static_cast<int>(groveInternalError) == static_cast<int>(ErrorCode::kInternalError));
static_assert(static_cast<int>(groveInvalidArgument) ==
              static_cast<int>(ErrorCode::kInvalidArgument));
static_assert(static_cast<int>(groveInvalidUsage) == static_cast<int>(ErrorCode::kInvalidUsage));
static_assert(static_cast<int>(groveRemoteError) == static_cast<int>(ErrorCode::kRemoteError));
static_assert(static_cast<int>(groveInProgress) == static_cast<int>(ErrorCode::kInProgress));
static_assert(static_cast<int>(groveTimeout) == static_cast<int>(ErrorCode::kTimeout));
// The C enums of types and operators mirror grove::DataType and grove::ReduceOp value for value.
#define GROVE_SAME(c, cpp) static_assert(static_cast<int>(c) == static_cast<int>(cpp))
GROVE_SAME(groveInt8, DataType::kInt8);
GROVE_SAME(groveUint8, DataType::kUint8);
GROVE_SAME(groveInt32, DataType::kInt32);
GROVE_SAME(groveUint32, DataType::kUint32);
GROVE_SAME(groveInt64, DataType::kInt64);
GROVE_SAME(groveUint64, DataType::kUint64);
GROVE_SAME(groveFloat16, DataType::kFloat16);
GROVE_SAME(groveFloat32, DataType::kFloat32);
GROVE_SAME(groveFloat64, DataType::kFloat64);
GROVE_SAME(groveBfloat16, DataType::kBFloat16);
GROVE_SAME(groveNumTypes, kDataTypeCount);
GROVE_SAME(groveSum, ReduceOp::kSum);
GROVE_SAME(groveProd, ReduceOp::kProd);
GROVE_SAME(groveMax, ReduceOp::kMax);
GROVE_SAME(groveMin, ReduceOp::kMin);
GROVE_SAME(groveAvg, ReduceOp::kAvg);
GROVE_SAME(groveBand, ReduceOp::kBand);
GROVE_SAME(groveBor, ReduceOp::kBor);
GROVE_SAME(groveBxor, ReduceOp::kBxor);
GROVE_SAME(groveNumOps, kReduceOpCount);
#undef GROVE_SAME

/// The calling thread's open group.
struct GroupState {
  int depth = 0;
  std::vector<groveComm_t> touched;  ///< In first-touch order.
  ErrorCode firstError = ErrorCode::kSuccess;
  std::string firstMessage;
};

thread_local std::string tLastError;
thread_local GroupState tGroup;

/// Records `code`/`message` as the open group's error unless it already has one.
void noteGroupError(ErrorCode code, const std::string& message) {
  if (tGroup.depth > 0 && tGroup.firstError == ErrorCode::kSuccess) {
    tGroup.firstError = code;
    tGroup.firstMessage = message;
  }
}

bool touchedByGroup(groveComm_t comm) {
  return std::find(tGroup.touched.begin(), tGroup.touched.end(), comm) != tGroup.touched.end();
}

/// Ends the groups of `comms` and drives them to completion from this thread. Returns the
/// first error (code and message) or kSuccess.
std::pair<ErrorCode, std::string> runGroups(const std::vector<groveComm_t>& comms) {
  std::pair<ErrorCode, std::string> first{ErrorCode::kSuccess, {}};
  auto note = [&first](ErrorCode code, std::string message) {
    if (first.first == ErrorCode::kSuccess) first = {code, std::move(message)};
  };
  auto rankText = [](groveComm_t comm) {
    try {
      return "rank " + std::to_string(comm->comm.rank()) + ": ";
    } catch (...) {
      return std::string();
    }
  };
  std::vector<Request> requests;
  std::vector<groveComm_t> owners;
  for (groveComm_t comm : comms) {
    try {
      requests.push_back(comm->comm.groupEndAsync());
      owners.push_back(comm);
    } catch (const Error& e) {
      note(e.code(), "groveGroupEnd: " + rankText(comm) + e.what());
    } catch (const std::exception& e) {
      note(ErrorCode::kInternalError, "groveGroupEnd: " + rankText(comm) + e.what());
    }
  }
  std::vector<bool> done(requests.size(), false);
  size_t left = requests.size();
  while (left > 0) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (done[i]) continue;
      bool finished = false;
      try {
        // wait() with a deadline of now polls without sleeping and, unlike test(), also
        // notices a failed peer and an expired GROVE_TIMEOUT.
        finished = requests[i].wait(std::chrono::steady_clock::now());
      } catch (const Error& e) {
        finished = true;
        note(e.code(), "groveGroupEnd: " + rankText(owners[i]) + e.what());
      } catch (const std::exception& e) {
        finished = true;
        note(ErrorCode::kInternalError, "groveGroupEnd: " + rankText(owners[i]) + e.what());
      }
      if (finished) {
        done[i] = true;
        --left;
      }
    }
    if (left > 0) std::this_thread::yield();
  }
  return first;
}

}  // namespace

void setLastError(std::string message) { tLastError = std::move(message); }

groveResult_t fail(ErrorCode code, std::string message) {
  setLastError(std::move(message));
  return static_cast<groveResult_t>(code);
}

void noteGroupFailure(groveResult_t result) {
  if (result != groveSuccess) noteGroupError(static_cast<ErrorCode>(result), tLastError);
}

void requireNonNull(const void* pointer, const char* name) {
  if (pointer == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + " is NULL");
  }
}

Communicator& communicatorOf(groveComm_t comm) {
  requireLive(comm);
  return comm->comm;
}

void touchForGroup(groveComm_t comm) {
  if (tGroup.depth == 0 || touchedByGroup(comm)) return;
  comm->comm.groupStart();
  tGroup.touched.push_back(comm);
}

bool inGroup() { return tGroup.depth > 0; }

}  // namespace grove::capi

using grove::Communicator;
using grove::Error;
using grove::ErrorCode;
using grove::capi::guarded;
using grove::capi::requireNonNull;

extern "C" {

groveResult_t groveGetVersion(int* version) {
  return guarded("groveGetVersion", [&] {
    requireNonNull(version, "version");
    *version = GROVE_VERSION_CODE;
  });
}

groveResult_t groveMemAlloc(void** ptr, size_t size) {
  return guarded("groveMemAlloc", [&] {
    requireNonNull(ptr, "ptr");
    if (size == 0) {
      throw grove::Error(grove::ErrorCode::kInvalidArgument,
                         "groveMemAlloc: size is 0 (expected at least 1 byte)");
    }
    *ptr = grove::allocate(size);
  });
}

groveResult_t groveMemFree(void* ptr) {
  return guarded("groveMemFree", [&] { grove::deallocate(ptr); });
}

groveResult_t groveCommSplit(groveComm_t comm, int color, int key, groveComm_t* newcomm,
                             void* config) {
  return guarded("groveCommSplit", [&] {
    Communicator& c = grove::capi::communicatorOf(comm);
    requireNonNull(newcomm, "newcomm");
    *newcomm = nullptr;
    if (config != nullptr) {
      throw Error(ErrorCode::kInvalidArgument, "config is not NULL, expected NULL (reserved)");
    }
    if (color < GROVE_SPLIT_NOCOLOR) {
      throw Error(ErrorCode::kInvalidArgument,
                  "color is " + std::to_string(color) + " on rank " + std::to_string(c.rank()) +
                      ", expected a non-negative color or GROVE_SPLIT_NOCOLOR (-1)");
    }
    if (grove::capi::inGroup()) {
      throw Error(ErrorCode::kInvalidUsage,
                  "called inside a group on rank " + std::to_string(c.rank()) +
                      "; split each rank from its own thread, outside groups");
    }
    Communicator part = c.split(color, key);
    if (part.valid()) *newcomm = grove::capi::registerHandle(std::move(part));
  });
}

groveResult_t groveCommRevoke(groveComm_t comm, int revokeFlags) {
  return guarded("groveCommRevoke", [&] {
    Communicator& c = grove::capi::communicatorOf(comm);
    if (revokeFlags != GROVE_REVOKE_DEFAULT) {
      throw Error(ErrorCode::kInvalidArgument, "revokeFlags is " + std::to_string(revokeFlags) +
                                                   " on rank " + std::to_string(c.rank()) +
                                                   ", expected GROVE_REVOKE_DEFAULT (0)");
    }
    c.revoke();
  });
}

groveResult_t groveCommShrink(groveComm_t comm, int* excludeRanksList, int excludeRanksCount,
                              groveComm_t* newcomm, void* config, int shrinkFlags) {
  return guarded("groveCommShrink", [&] {
    Communicator& c = grove::capi::communicatorOf(comm);
    requireNonNull(newcomm, "newcomm");
    *newcomm = nullptr;
    const std::string where = " on rank " + std::to_string(c.rank());
    if (config != nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  "config is not NULL" + where + ", expected NULL (reserved)");
    }
    if (shrinkFlags != GROVE_SHRINK_DEFAULT && shrinkFlags != GROVE_SHRINK_ABORT) {
      throw Error(ErrorCode::kInvalidArgument,
                  "shrinkFlags is " + std::to_string(shrinkFlags) + where +
                      ", expected GROVE_SHRINK_DEFAULT (0) or GROVE_SHRINK_ABORT (1)");
    }
    if (excludeRanksCount < 0) {
      throw Error(ErrorCode::kInvalidArgument, "excludeRanksCount is " +
                                                   std::to_string(excludeRanksCount) + where +
                                                   ", expected at least 0");
    }
    if (excludeRanksCount > 0) requireNonNull(excludeRanksList, "excludeRanksList");
    if (grove::capi::inGroup()) {
      throw Error(ErrorCode::kInvalidUsage,
                  "called inside a group" + where + "; shrink each rank from its own thread");
    }
    if (shrinkFlags == GROVE_SHRINK_ABORT) c.revoke();
    Communicator survivors =
        c.shrink(std::span<const int>(excludeRanksList, static_cast<size_t>(excludeRanksCount)));
    *newcomm = grove::capi::registerHandle(std::move(survivors));
  });
}

groveResult_t groveCommAbort(groveComm_t comm) {
  return guarded("groveCommAbort", [&] {
    if (comm == nullptr) return;
    grove::capi::requireLive(comm);
    comm->comm.abort();  // first: a call on another thread fails and leaves before this returns
    auto& touched = grove::capi::tGroup.touched;
    touched.erase(std::remove(touched.begin(), touched.end(), comm), touched.end());
    grove::capi::retireHandle(comm, "groveCommAbort");
  });
}

groveResult_t groveCommDestroy(groveComm_t comm) {
  return guarded("groveCommDestroy", [&] {
    if (comm == nullptr) return;
    grove::capi::requireLive(comm);
    if (grove::capi::touchedByGroup(comm)) {
      throw Error(ErrorCode::kInvalidUsage,
                  "comm of rank " + std::to_string(comm->comm.rank()) +
                      " has calls queued in this thread's open group; call groveGroupEnd "
                      "first (or groveCommAbort)");
    }
    grove::capi::retireHandle(comm, "groveCommDestroy");
  });
}

groveResult_t groveCommCount(const groveComm_t comm, int* count) {
  return guarded("groveCommCount", [&] {
    Communicator& c = grove::capi::communicatorOf(comm);
    requireNonNull(count, "count");
    *count = c.size();
  });
}

groveResult_t groveCommUserRank(const groveComm_t comm, int* rank) {
  return guarded("groveCommUserRank", [&] {
    Communicator& c = grove::capi::communicatorOf(comm);
    requireNonNull(rank, "rank");
    *rank = c.rank();
  });
}

groveResult_t groveCommGetAsyncError(groveComm_t comm, groveResult_t* asyncError) {
  return guarded("groveCommGetAsyncError", [&] {
    Communicator& c = grove::capi::communicatorOf(comm);
    requireNonNull(asyncError, "asyncError");
    *asyncError = static_cast<groveResult_t>(c.getAsyncError());
  });
}

groveResult_t groveGroupStart(void) {
  return guarded("groveGroupStart", [] { ++grove::capi::tGroup.depth; });
}

groveResult_t groveGroupEnd(void) {
  using grove::capi::tGroup;
  if (tGroup.depth == 0) {
    return guarded("groveGroupEnd", [] {
      throw Error(ErrorCode::kInvalidUsage, "no group is open on this thread");
    });
  }
  if (--tGroup.depth > 0) return groveSuccess;
  std::vector<groveComm_t> touched = std::move(tGroup.touched);
  ErrorCode firstError = tGroup.firstError;
  std::string firstMessage = std::move(tGroup.firstMessage);
  tGroup = {};
  std::pair<ErrorCode, std::string> outcome{ErrorCode::kSuccess, {}};
  groveResult_t result =
      guarded("groveGroupEnd", [&] { outcome = grove::capi::runGroups(touched); });
  if (firstError != ErrorCode::kSuccess) {
    grove::capi::setLastError(std::move(firstMessage));
    return static_cast<groveResult_t>(firstError);
  }
  if (outcome.first != ErrorCode::kSuccess) {
    grove::capi::setLastError(std::move(outcome.second));
    return static_cast<groveResult_t>(outcome.first);
  }
  return result;
}

const char* groveGetErrorString(groveResult_t result) {
  switch (result) {
    case groveSuccess:
      return "no error";
    case groveUnhandledCudaError:
      return "unhandled cuda error";
    case groveSystemError:
      return "unhandled system error";
    case groveInternalError:
      return "internal error";
    case groveInvalidArgument:
      return "invalid argument";
    case groveInvalidUsage:
      return "invalid usage";
    case groveRemoteError:
      return "remote process exited or there was a network error";
    case groveInProgress:
      return "operation in progress";
    case groveTimeout:
      return "timeout";
    case groveNumResults:
    case groveResultForceInt:
    case groveResultForceIntMin:
      break;
  }
  return "unknown result code";
}

const char* groveGetLastError(groveComm_t /*comm*/) { return grove::capi::tLastError.c_str(); }

}  // extern "C"
