// process_check, reductions: allReduce, reduce and reduceScatter over every type and every
// operator, out of place and in place (NCCL's forms), for counts 0, 1 and a prime that no rank
// count divides, plus a count of several FIFO slots for a few type/operator pairs.
//
// Why every pair across processes: the reduction kernels are chosen per type and operator and
// run on data that crossed address spaces (shared-memory slots or TCP staging buffers); a
// kernel reading a half-written slot, or a finalize (avg) applied on the wrong rank, shows only
// for some pairs. Inputs are small integers, so the expected value is exact for every order.
#include <string>
#include <vector>

#include "check_support.hpp"

namespace grove::proc {
namespace {

constexpr size_t kCounts[] = {0, 1, 1031};
constexpr size_t kLargeCount = 200003;  // several 256 KiB slots for 4- and 8-byte types

std::string describe(const char* collective, DataType type, ReduceOp op, size_t count, bool inPlace,
                     int root = -1) {
  std::string s = std::string(collective) + " " + std::string(toString(type)) + " " +
                  std::string(toString(op)) + " count " + std::to_string(count) +
                  (inPlace ? " in place" : " out of place");
  if (root >= 0) s += " root " + std::to_string(root);
  return s;
}

void checkAllReduce(Communicator& comm, Checker& check, DataType type, ReduceOp op, size_t count,
                    int salt) {
  const size_t bytes = count * dataTypeSize(type);
  const std::vector<uint8_t> input = reductionInput(comm.rank(), count, type, op, salt);
  const std::vector<uint8_t> want = reductionExpected(comm.size(), count, type, op, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("allReduce", type, op, count, inPlace);
    GuardedBuffer send(bytes);
    std::copy(input.begin(), input.end(), send.data());
    GuardedBuffer recv(bytes);
    GuardedBuffer& out = inPlace ? send : recv;
    comm.allReduce(send.data(), out.data(), count, type, op);
    check.bytes(check.step, out.data(), want.data(), bytes);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkReduce(Communicator& comm, Checker& check, DataType type, ReduceOp op, size_t count,
                 int salt) {
  const size_t bytes = count * dataTypeSize(type);
  const int root = salt % comm.size();
  const bool isRoot = comm.rank() == root;
  const std::vector<uint8_t> input = reductionInput(comm.rank(), count, type, op, salt);
  const std::vector<uint8_t> want = reductionExpected(comm.size(), count, type, op, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("reduce", type, op, count, inPlace, root);
    GuardedBuffer send(bytes);
    std::copy(input.begin(), input.end(), send.data());
    GuardedBuffer recv(bytes);
    // Out of place, non-roots pass no receive buffer (allowed: it is written on the root only).
    void* out = inPlace ? send.data() : (isRoot ? recv.data() : nullptr);
    comm.reduce(send.data(), out, count, type, op, root);
    if (isRoot) check.bytes(check.step, static_cast<uint8_t*>(out), want.data(), bytes);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkReduceScatter(Communicator& comm, Checker& check, DataType type, ReduceOp op,
                        size_t count, int salt) {
  const int n = comm.size();
  const size_t bytes = count * dataTypeSize(type);
  const std::vector<uint8_t> input = reductionInput(comm.rank(), count * n, type, op, salt);
  const std::vector<uint8_t> full = reductionExpected(n, count * n, type, op, salt);
  const uint8_t* want = full.data() + comm.rank() * bytes;
  for (bool inPlace : {false, true}) {
    check.step = describe("reduceScatter", type, op, count, inPlace);
    GuardedBuffer send(bytes * n);
    std::copy(input.begin(), input.end(), send.data());
    GuardedBuffer recv(bytes);
    uint8_t* out = inPlace ? send.data() + comm.rank() * bytes : recv.data();
    comm.reduceScatter(send.data(), out, count, type, op);
    check.bytes(check.step, out, want, bytes);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes * n);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

}  // namespace

void checkAll(Communicator& comm, Checker& check, DataType type, ReduceOp op, size_t count,
              int salt) {
  checkAllReduce(comm, check, type, op, count, salt);
  checkReduce(comm, check, type, op, count, salt + 1);
  checkReduceScatter(comm, check, type, op, count, salt + 2);
}

void checkReductions(Communicator& comm, Checker& check) {
  int salt = 0;
  for (int t = 0; t < kDataTypeCount; ++t) {
    for (int o = 0; o < kReduceOpCount; ++o) {
      if (!acceptsOp(static_cast<DataType>(t), static_cast<ReduceOp>(o))) continue;
      for (size_t count : kCounts) {
        checkAll(comm, check, static_cast<DataType>(t), static_cast<ReduceOp>(o), count, salt);
        salt += 3;
      }
    }
  }
  // Messages of many slots, which pipeline through the FIFOs (reduceScatter's send buffer is
  // size() times larger, so it gets a smaller count).
  const std::pair<DataType, ReduceOp> large[] = {{DataType::kFloat32, ReduceOp::kSum},
                                                 {DataType::kBFloat16, ReduceOp::kMax},
                                                 {DataType::kInt64, ReduceOp::kAvg}};
  for (const auto& [type, op] : large) {
    checkAllReduce(comm, check, type, op, kLargeCount, salt++);
    checkReduce(comm, check, type, op, kLargeCount, salt++);
    checkReduceScatter(comm, check, type, op, kLargeCount / comm.size() + 1, salt++);
  }
}

}  // namespace grove::proc
