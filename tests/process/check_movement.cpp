// process_check, data movement: broadcast, allGather, allToAll, gather and scatter, out of
// place and in place (NCCL's forms), every root for the rooted ones, 1-, 2- and 8-byte types,
// counts 0, 1, a prime, and one large enough to span many FIFO slots.
//
// Why byte patterns: data movement is offsets. Every rank's data differs per rank and per byte
// (rank q's byte p is a function both sides can compute), receive buffers start as a poison
// byte no pattern byte equals, and guard zones surround every buffer, so a block landing at the
// wrong place, a block never written, or a write past a buffer each shows as a wrong byte.
#include <string>
#include <vector>

#include "check_support.hpp"

namespace grove::proc {
namespace {

std::string describe(const char* collective, DataType type, size_t count, bool inPlace,
                     int root = -1) {
  std::string s = std::string(collective) + " " + std::string(toString(type)) + " count " +
                  std::to_string(count) + (inPlace ? " in place" : " out of place");
  if (root >= 0) s += " root " + std::to_string(root);
  return s;
}

}  // namespace

void checkBroadcast(Communicator& comm, Checker& check, DataType type, size_t count, int root,
                    int salt) {
  const size_t bytes = count * dataTypeSize(type);
  const std::vector<uint8_t> want = pattern(root, 0, bytes, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("broadcast", type, count, inPlace, root);
    GuardedBuffer send(bytes);
    if (comm.rank() == root) std::copy(want.begin(), want.end(), send.data());
    GuardedBuffer recv(bytes);
    GuardedBuffer& out = inPlace ? send : recv;
    comm.broadcast(send.data(), out.data(), count, type, root);
    check.bytes(check.step, out.data(), want.data(), bytes);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkAllGather(Communicator& comm, Checker& check, DataType type, size_t count, int salt) {
  const int n = comm.size();
  const size_t bytes = count * dataTypeSize(type);
  std::vector<uint8_t> want;
  for (int q = 0; q < n; ++q) {
    const std::vector<uint8_t> block = pattern(q, 0, bytes, salt);
    want.insert(want.end(), block.begin(), block.end());
  }
  const std::vector<uint8_t> mine = pattern(comm.rank(), 0, bytes, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("allGather", type, count, inPlace);
    GuardedBuffer send(bytes);
    GuardedBuffer recv(bytes * n);
    uint8_t* in = inPlace ? recv.data() + comm.rank() * bytes : send.data();
    std::copy(mine.begin(), mine.end(), in);
    comm.allGather(in, recv.data(), count, type);
    check.bytes(check.step, recv.data(), want.data(), bytes * n);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkAllToAll(Communicator& comm, Checker& check, DataType type, size_t count, int salt) {
  const int n = comm.size();
  const size_t bytes = count * dataTypeSize(type);
  // Rank p's send buffer is pattern(p) over n blocks; block q goes to rank q.
  const std::vector<uint8_t> input = pattern(comm.rank(), 0, bytes * n, salt);
  std::vector<uint8_t> want;
  for (int q = 0; q < n; ++q) {
    const std::vector<uint8_t> block = pattern(q, comm.rank() * bytes, bytes, salt);
    want.insert(want.end(), block.begin(), block.end());
  }
  for (bool inPlace : {false, true}) {
    check.step = describe("allToAll", type, count, inPlace);
    GuardedBuffer send(bytes * n);
    std::copy(input.begin(), input.end(), send.data());
    GuardedBuffer recv(bytes * n);
    GuardedBuffer& out = inPlace ? send : recv;
    comm.allToAll(send.data(), out.data(), count, type);
    check.bytes(check.step, out.data(), want.data(), bytes * n);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes * n);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkGather(Communicator& comm, Checker& check, DataType type, size_t count, int root,
                 int salt) {
  const int n = comm.size();
  const bool isRoot = comm.rank() == root;
  const size_t bytes = count * dataTypeSize(type);
  std::vector<uint8_t> want;
  for (int q = 0; q < n; ++q) {
    const std::vector<uint8_t> block = pattern(q, 0, bytes, salt);
    want.insert(want.end(), block.begin(), block.end());
  }
  const std::vector<uint8_t> mine = pattern(comm.rank(), 0, bytes, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("gather", type, count, inPlace, root);
    GuardedBuffer send(bytes);
    GuardedBuffer recv(bytes * n);
    uint8_t* in = inPlace && isRoot ? recv.data() + root * bytes : send.data();
    std::copy(mine.begin(), mine.end(), in);
    // Non-roots pass no receive buffer (allowed: it is written on the root only).
    comm.gather(in, isRoot ? recv.data() : nullptr, count, type, root);
    if (isRoot) check.bytes(check.step, recv.data(), want.data(), bytes * n);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkScatter(Communicator& comm, Checker& check, DataType type, size_t count, int root,
                  int salt) {
  const int n = comm.size();
  const bool isRoot = comm.rank() == root;
  const size_t bytes = count * dataTypeSize(type);
  const std::vector<uint8_t> input = pattern(root, 0, bytes * n, salt);
  const std::vector<uint8_t> want = pattern(root, comm.rank() * bytes, bytes, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("scatter", type, count, inPlace, root);
    GuardedBuffer send(bytes * n);
    if (isRoot) std::copy(input.begin(), input.end(), send.data());
    GuardedBuffer recv(bytes);
    uint8_t* out = inPlace && isRoot ? send.data() + root * bytes : recv.data();
    comm.scatter(send.data(), out, count, type, root);
    check.bytes(check.step, out, want.data(), bytes);
    if (isRoot) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes * n);
    send.checkGuards(check, check.step);
    recv.checkGuards(check, check.step);
  }
}

void checkMovement(Communicator& comm, Checker& check) {
  const int n = comm.size();
  constexpr size_t kCounts[] = {0, 1, 1031};
  constexpr DataType kTypes[] = {DataType::kInt8, DataType::kFloat16, DataType::kFloat64};
  int salt = 1;
  for (DataType type : kTypes) {
    for (size_t count : kCounts) {
      for (int root = 0; root < n; ++root) {
        checkBroadcast(comm, check, type, count, root, salt++);
        checkGather(comm, check, type, count, root, salt++);
        checkScatter(comm, check, type, count, root, salt++);
      }
      checkAllGather(comm, check, type, count, salt++);
      checkAllToAll(comm, check, type, count, salt++);
    }
  }
  // Many slots: 1 MiB + 3 bytes in total per call on the largest buffer.
  constexpr size_t kLarge = (1 << 20) + 3;
  checkBroadcast(comm, check, DataType::kUint8, kLarge, n - 1, salt++);
  checkAllGather(comm, check, DataType::kUint8, kLarge / n, salt++);
  checkAllToAll(comm, check, DataType::kUint8, kLarge / n, salt++);
  checkGather(comm, check, DataType::kUint8, kLarge / n, n / 2, salt++);
  checkScatter(comm, check, DataType::kUint8, kLarge / n, n / 2, salt++);
}

}  // namespace grove::proc
