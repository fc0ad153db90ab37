#include "core/validate.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "core/comm_state.hpp"
#include "grove/error.hpp"

namespace grove::detail {
namespace {

[[noreturn]] void invalid(const CallSite& site, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("grove {} (rank {} of {}): {}", site.name, site.rank, site.size, what));
}

}  // namespace

void checkUsable(const CommState& comm, const char* name) {
  if (comm.aborted()) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove {} (rank {} of {}): the communicator was {}", name, comm.rank(),
                            comm.size(), comm.revoked() ? "revoked" : "aborted"));
  }
  if (comm.asyncError() != ErrorCode::kSuccess) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove {} (rank {} of {}): the communicator failed earlier ({}); "
                            "create a new one",
                            name, comm.rank(), comm.size(), toString(comm.asyncError())));
  }
}

void checkType(const CallSite& site, DataType type) {
  if (!isValid(type)) {
    invalid(site, fmt::format("type {} is not a grove::DataType (expected 0..{})",
                              static_cast<int>(type), kDataTypeCount - 1));
  }
}

void checkOp(const CallSite& site, ReduceOp op, DataType type) {
  if (!isValid(op)) {
    invalid(site, fmt::format("op {} is not a grove::ReduceOp (expected 0..{})",
                              static_cast<int>(op), kReduceOpCount - 1));
  }
  if (!acceptsOp(type, op)) {
    invalid(site, fmt::format("op {} needs an integer type (int8, uint8, int32, uint32, int64, "
                              "uint64), got type {}",
                              toString(op), toString(type)));
  }
}

void checkBuffer(const CallSite& site, const char* argument, const void* buffer, size_t count,
                 DataType type) {
  if (buffer == nullptr && count > 0) {
    invalid(site, fmt::format("{} is null but must hold {} {} elements", argument, count,
                              toString(type)));
  }
}

void checkRank(const CallSite& site, const char* argument, int value, bool notSelf) {
  if (value < 0 || value >= site.size) {
    invalid(site,
            fmt::format("{} {} is out of range (expected 0..{})", argument, value, site.size - 1));
  }
  if (notSelf && value == site.rank) {
    invalid(site,
            fmt::format("{} {} is this rank itself (expected another rank)", argument, value));
  }
}

size_t checkedBytes(const CallSite& site, const char* argument, size_t count, size_t multiplier,
                    DataType type) {
  size_t element = dataTypeSize(type);
  size_t max = std::numeric_limits<size_t>::max() / 2;
  if (multiplier != 0 && element != 0 && count > max / multiplier / element) {
    invalid(site, fmt::format("{} {} is too large (the buffer would exceed the address space)",
                              argument, count));
  }
  return count * multiplier * element;
}

bool checkOverlap(const CallSite& site, const void* send, size_t sendBytes, const void* recv,
                  size_t recvBytes, const void* inPlaceSend, const char* inPlaceForm) {
  if (send == nullptr || recv == nullptr || sendBytes == 0 || recvBytes == 0) {
    return send != nullptr && send == inPlaceSend;
  }
  if (send == inPlaceSend) return true;
  auto s = reinterpret_cast<uintptr_t>(send);
  auto r = reinterpret_cast<uintptr_t>(recv);
  if (s < r + recvBytes && r < s + sendBytes) {
    invalid(site, fmt::format("sendbuf and recvbuf overlap but are not the in-place form ({})",
                              inPlaceForm));
  }
  return false;
}

}  // namespace grove::detail
