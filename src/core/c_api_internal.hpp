// Shared plumbing of the C ABI (c_api.cpp, c_api_collectives.cpp): the handle behind
// groveComm_t, the exception-to-code boundary, the thread's last error and the hook that
// routes calls made inside a groveGroupStart/End group.
//
// Why a boundary function: a C++ exception crossing into C code is undefined behaviour, so
// every exported function runs its body through guarded(), which turns grove::Error into its
// code and anything else into groveInternalError, and records the message for
// groveGetLastError.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/c_api_handles.hpp"
#include "grove/communicator.hpp"
#include "grove/error.hpp"
#include "grove/grove.h"

namespace grove::bootstrap {
class TcpStoreServer;
}

namespace grove::capi {

/// The store servers groveGetUniqueId started in this process, by port. An id's server runs
/// until the first communicator made from it in this process; from then on it lives as long
/// as the communicators made from it here (each holds it), so init/destroy cycles with fresh
/// ids leave no server, thread or socket behind. An id never used here keeps its server for
/// the process's lifetime: its ranks may all be elsewhere.
struct IdServers {
  std::mutex mutex;
  std::map<uint16_t, std::shared_ptr<bootstrap::TcpStoreServer>> unused;
  std::map<uint16_t, std::weak_ptr<bootstrap::TcpStoreServer>> used;
};
IdServers& idServers();

/// The server of the id whose store listens on `port`, if this process runs it (see
/// IdServers), else null.
std::shared_ptr<void> serverForId(uint16_t port);

/// Stores `message` as the calling thread's last error.
void setLastError(std::string message);

/// Records a failed call: stores `message` as the last error; returns `code` as a
/// groveResult_t.
groveResult_t fail(ErrorCode code, std::string message);

/// After a call queued into this thread's open group returned `result`: when it failed and
/// the group has no error yet, the group's error becomes `result` with the last error's text,
/// so that groveGroupEnd reports it. No-op for groveSuccess or outside groups.
void noteGroupFailure(groveResult_t result);

/// Throws kInvalidArgument "<name> is NULL" when `pointer` is null.
void requireNonNull(const void* pointer, const char* name);

/// Returns comm's Communicator; throws kInvalidArgument when comm is NULL, destroyed or not
/// a handle grove returned (requireLive).
Communicator& communicatorOf(groveComm_t comm);

/// Prepares a call on `comm`: inside a group, calls comm.groupStart() the first time this
/// thread's open group touches comm (the C++ API then queues the call). No-op otherwise.
void touchForGroup(groveComm_t comm);

/// True when this thread has a group open.
bool inGroup();

/// Runs `body` and converts its outcome into a groveResult_t; never throws. Messages of
/// failures are prefixed with `fn`.
template <class Body>
groveResult_t guarded(const char* fn, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return groveSuccess;
  } catch (const Error& e) {
    try {
      return fail(e.code(), std::string(fn) + ": " + e.what());
    } catch (...) {
      return static_cast<groveResult_t>(e.code());
    }
  } catch (const std::bad_alloc&) {
    try {
      return fail(ErrorCode::kSystemError, std::string(fn) + ": out of memory");
    } catch (...) {
      return groveSystemError;
    }
  } catch (const std::exception& e) {
    try {
      return fail(ErrorCode::kInternalError,
                  std::string(fn) + ": internal error (please report): " + e.what());
    } catch (...) {
      return groveInternalError;
    }
  } catch (...) {
    try {
      return fail(ErrorCode::kInternalError, std::string(fn) + ": unknown internal error");
    } catch (...) {
      return groveInternalError;
    }
  }
}

}  // namespace grove::capi
