// The C ABI, part two: the collectives and point-to-point calls of grove.h.
//
// Each function checks what the C side can get wrong that C++ cannot (an enumeration value
// out of range, a NULL buffer the call needs, a root or peer out of range) so the message
// names the C argument, then hands the call to the C++ Communicator. Inside a group the
// communicator's C++ group is opened first (touchForGroup) and the C++ API queues the call;
// a failure is also recorded as the group's error for groveGroupEnd.
#include <string>

#include "core/c_api_internal.hpp"
#include "grove/types.hpp"

namespace grove::capi {
namespace {

std::string onRank(const Communicator& comm) { return " on rank " + std::to_string(comm.rank()); }

DataType checkedType(groveDataType_t datatype, const Communicator& comm) {
  auto type = static_cast<DataType>(datatype);
  if (!isValid(type)) {
    throw Error(ErrorCode::kInvalidArgument,
                "datatype is " + std::to_string(static_cast<int>(datatype)) + onRank(comm) +
                    ", expected a groveDataType_t in [0, " + std::to_string(kDataTypeCount) + ")");
  }
  return type;
}

ReduceOp checkedOp(groveRedOp_t op, const Communicator& comm) {
  auto reduceOp = static_cast<ReduceOp>(op);
  if (!isValid(reduceOp)) {
    throw Error(ErrorCode::kInvalidArgument,
                "op is " + std::to_string(static_cast<int>(op)) + onRank(comm) +
                    ", expected a groveRedOp_t in [0, " + std::to_string(kReduceOpCount) + ")");
  }
  return reduceOp;
}

/// Throws when `buffer` is NULL although the call moves elements through it.
void checkBuffer(const void* buffer, size_t count, const char* name, const Communicator& comm) {
  if (buffer == nullptr && count > 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + " is NULL with count " +
                                                 std::to_string(count) + onRank(comm) +
                                                 ", expected a buffer");
  }
}

/// Throws when `rank` (a root or a peer, named `name`) is not a rank of comm.
void checkRank(int rank, const char* name, const Communicator& comm) {
  if (rank < 0 || rank >= comm.size()) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + " is " + std::to_string(rank) +
                                                 onRank(comm) + ", expected 0 <= " + name +
                                                 " < nranks = " + std::to_string(comm.size()));
  }
}

/// Runs `body(communicator)` behind the C boundary, group-aware: `check(communicator)`
/// first validates the arguments, then the communicator joins this thread's open group (if
/// any), then `body` issues the C++ call (queued when inside a group).
template <class Check, class Body>
groveResult_t call(const char* fn, groveComm_t comm, Check&& check, Body&& body) noexcept {
  groveResult_t result = guarded(fn, [&] {
    Communicator& c = communicatorOf(comm);
    check(c);
    touchForGroup(comm);
    body(c);
  });
  noteGroupFailure(result);
  return result;
}

}  // namespace
}  // namespace grove::capi

using grove::Communicator;
using grove::capi::call;
using grove::capi::checkBuffer;
using grove::capi::checkedOp;
using grove::capi::checkedType;
using grove::capi::checkRank;

extern "C" {

groveResult_t groveAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             groveDataType_t datatype, groveRedOp_t op, groveComm_t comm) {
  return call(
      "groveAllReduce", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkedOp(op, c);
        checkBuffer(sendbuff, count, "sendbuff", c);
        checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.allReduce(sendbuff, recvbuff, count, checkedType(datatype, c), checkedOp(op, c));
      });
}

groveResult_t groveBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             groveDataType_t datatype, int root, groveComm_t comm) {
  return call(
      "groveBroadcast", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkRank(root, "root", c);
        if (c.rank() == root) checkBuffer(sendbuff, count, "sendbuff", c);
        checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.broadcast(sendbuff, recvbuff, count, checkedType(datatype, c), root);
      });
}

groveResult_t groveReduce(const void* sendbuff, void* recvbuff, size_t count,
                          groveDataType_t datatype, groveRedOp_t op, int root, groveComm_t comm) {
  return call(
      "groveReduce", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkedOp(op, c);
        checkRank(root, "root", c);
        checkBuffer(sendbuff, count, "sendbuff", c);
        if (c.rank() == root) checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.reduce(sendbuff, recvbuff, count, checkedType(datatype, c), checkedOp(op, c), root);
      });
}

groveResult_t groveAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             groveDataType_t datatype, groveComm_t comm) {
  return call(
      "groveAllGather", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkBuffer(sendbuff, sendcount, "sendbuff", c);
        checkBuffer(recvbuff, sendcount, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.allGather(sendbuff, recvbuff, sendcount, checkedType(datatype, c));
      });
}

groveResult_t groveReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 groveDataType_t datatype, groveRedOp_t op, groveComm_t comm) {
  return call(
      "groveReduceScatter", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkedOp(op, c);
        checkBuffer(sendbuff, recvcount, "sendbuff", c);
        checkBuffer(recvbuff, recvcount, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.reduceScatter(sendbuff, recvbuff, recvcount, checkedType(datatype, c), checkedOp(op, c));
      });
}

groveResult_t groveAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                            groveDataType_t datatype, groveComm_t comm) {
  return call(
      "groveAlltoAll", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkBuffer(sendbuff, count, "sendbuff", c);
        checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) { c.allToAll(sendbuff, recvbuff, count, checkedType(datatype, c)); });
}

groveResult_t groveGather(const void* sendbuff, void* recvbuff, size_t count,
                          groveDataType_t datatype, int root, groveComm_t comm) {
  return call(
      "groveGather", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkRank(root, "root", c);
        checkBuffer(sendbuff, count, "sendbuff", c);
        if (c.rank() == root) checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.gather(sendbuff, recvbuff, count, checkedType(datatype, c), root);
      });
}

groveResult_t groveScatter(const void* sendbuff, void* recvbuff, size_t count,
                           groveDataType_t datatype, int root, groveComm_t comm) {
  return call(
      "groveScatter", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkRank(root, "root", c);
        if (c.rank() == root) checkBuffer(sendbuff, count, "sendbuff", c);
        checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) {
        c.scatter(sendbuff, recvbuff, count, checkedType(datatype, c), root);
      });
}

groveResult_t groveSend(const void* sendbuff, size_t count, groveDataType_t datatype, int peer,
                        groveComm_t comm) {
  return call(
      "groveSend", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkRank(peer, "peer", c);
        checkBuffer(sendbuff, count, "sendbuff", c);
      },
      [&](Communicator& c) { c.send(sendbuff, count, checkedType(datatype, c), peer); });
}

groveResult_t groveRecv(void* recvbuff, size_t count, groveDataType_t datatype, int peer,
                        groveComm_t comm) {
  return call(
      "groveRecv", comm,
      [&](Communicator& c) {
        checkedType(datatype, c);
        checkRank(peer, "peer", c);
        checkBuffer(recvbuff, count, "recvbuff", c);
      },
      [&](Communicator& c) { c.recv(recvbuff, count, checkedType(datatype, c), peer); });
}

}  // extern "C"
