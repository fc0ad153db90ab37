// process_check registered: allReduce, reduceScatter, allGather and broadcast over buffers
// from grove::allocate (registered memory, which local peers map and read in place), over
// sub-buffers of such memory at odd element offsets, and over mixes of registered and
// ordinary memory — between ranks and between the two buffers of one call. Run by
// process_test.py's "registered" case with GROVE_DIRECT_MIN_BYTES=1 (every non-empty call of
// these collectives takes the single-host direct path) and with the default threshold.
//
// Why its own suite: the direct path reads a peer's buffer where the peer's descriptor says
// it is — through a mapping of the peer's allocation, or with process_vm_readv for ordinary
// memory — so the mistakes it can make are of addresses and lifetimes, not of arithmetic: a
// sub-buffer's offset dropped, an allocation's tail read past, a peer's mapping of a freed
// allocation reused for a new one at the same address. Each shows as a wrong byte here:
// inputs differ per rank, per element and per call (salt), outputs start as poison, and the
// bytes around every buffer (guard zones, the unused tail of an allocation's last page) must
// survive every call. The expected values are those of the normal path, exactly.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "check_support.hpp"
#include "grove/memory.hpp"

namespace grove::proc {
namespace {

constexpr size_t kCounts[] = {0, 1, 7, 1000};
constexpr size_t kLarge = (size_t{1} << 20) + 3;  // Divisible by no rank count > 1 tested.
constexpr uint8_t kGuardByte = 0xEE;
constexpr size_t kGuard = 64;

/// Where one buffer of a call lives.
enum class Memory {
  kOrdinary,    ///< The heap (process_vm_readv for peers).
  kRegistered,  ///< A grove::allocate allocation of exactly the buffer's size.
  kSub,         ///< Inside a larger allocation, at an odd element offset, guard bytes around.
};

/// Which memory each rank gives to the send and receive buffers of one call.
enum class Mode {
  kRegistered,     ///< Both registered, on every rank.
  kSubBuffer,      ///< Both sub-buffers, on every rank.
  kMixedRanks,     ///< Even ranks registered, odd ranks ordinary.
  kRegisteredIn,   ///< Send registered, receive ordinary.
  kRegisteredOut,  ///< Send ordinary, receive registered.
};

const char* toString(Mode mode) {
  switch (mode) {
    case Mode::kRegistered:
      return "registered";
    case Mode::kSubBuffer:
      return "sub-buffers";
    case Mode::kMixedRanks:
      return "even ranks registered";
    case Mode::kRegisteredIn:
      return "registered in, ordinary out";
    case Mode::kRegisteredOut:
      return "ordinary in, registered out";
  }
  return "?";
}

Memory memoryOf(Mode mode, int rank, bool send) {
  switch (mode) {
    case Mode::kRegistered:
      return Memory::kRegistered;
    case Mode::kSubBuffer:
      return Memory::kSub;
    case Mode::kMixedRanks:
      return rank % 2 == 0 ? Memory::kRegistered : Memory::kOrdinary;
    case Mode::kRegisteredIn:
      return send ? Memory::kRegistered : Memory::kOrdinary;
    case Mode::kRegisteredOut:
      return send ? Memory::kOrdinary : Memory::kRegistered;
  }
  return Memory::kOrdinary;
}

/// One buffer of `bytes` bytes filled with `fill`, in the memory asked for, that can tell
/// whether anything around it was written.
class Buffer {
 public:
  Buffer(Memory memory, size_t bytes, size_t elementSize, uint8_t fill = kPoison) : bytes_(bytes) {
    if (memory == Memory::kOrdinary) {
      ordinary_ = std::make_unique<GuardedBuffer>(bytes, fill);
      data_ = ordinary_->data();
      return;
    }
    lead_ = memory == Memory::kSub ? 3 * elementSize : 0;
    trail_ = memory == Memory::kSub ? kGuard : 0;
    // allocate(0) is an error: an empty buffer still gets a byte of its own.
    allocated_ = std::max<size_t>(lead_ + bytes + trail_, 1);
    base_ = static_cast<uint8_t*>(allocate(allocated_));
    std::memset(base_, kGuardByte, lead_);
    data_ = base_ + lead_;
    std::memset(data_, fill, bytes);
    std::memset(data_ + bytes, kGuardByte, trail_);
  }
  ~Buffer() {
    if (base_ != nullptr) deallocate(base_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }

  /// Records a failure under `what` when a byte around the buffer changed: an ordinary
  /// buffer's guards; a sub-buffer's guards; the rest of a registered allocation's last page
  /// (zero since allocate, and mapped by peers just like the buffer).
  void checkIntact(Checker& check, const std::string& what) const {
    if (ordinary_) {
      ordinary_->checkGuards(check, what);
      return;
    }
    if (!isRegistered(data_, bytes_)) check.fail(what + ": the buffer is not registered");
    for (size_t i = 0; i < lead_; ++i) {
      if (base_[i] != kGuardByte) return check.fail(what + ": a byte before the buffer changed");
    }
    for (size_t i = 0; i < trail_; ++i) {
      if (data_[bytes_ + i] != kGuardByte) {
        return check.fail(what + ": a byte after the buffer changed");
      }
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t end = (allocated_ + page - 1) / page * page;
    for (size_t i = allocated_; i < end; ++i) {
      if (base_[i] != 0) return check.fail(what + ": the allocation's page tail changed");
    }
  }

 private:
  size_t bytes_;
  size_t lead_ = 0;
  size_t trail_ = 0;
  size_t allocated_ = 0;
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  std::unique_ptr<GuardedBuffer> ordinary_;
};

std::string describe(const char* collective, Mode mode, DataType type, size_t count, bool inPlace,
                     const std::string& extra = "") {
  std::string s = std::string("registered: ") + collective + " " + toString(mode) + " " +
                  std::string(grove::toString(type)) + " count " + std::to_string(count) +
                  (inPlace ? " in place" : " out of place");
  if (!extra.empty()) s += " " + extra;
  return s;
}

void checkAllReduce(Communicator& comm, Checker& check, Mode mode, DataType type, ReduceOp op,
                    size_t count, int salt) {
  const int rank = comm.rank();
  const size_t width = dataTypeSize(type);
  const size_t bytes = count * width;
  const std::vector<uint8_t> input = reductionInput(rank, count, type, op, salt);
  const std::vector<uint8_t> want = reductionExpected(comm.size(), count, type, op, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("allReduce", mode, type, count, inPlace, std::string(toString(op)));
    Buffer send(memoryOf(mode, rank, true), bytes, width);
    Buffer recv(memoryOf(mode, rank, false), bytes, width);
    std::copy(input.begin(), input.end(), send.data());
    Buffer& out = inPlace ? send : recv;
    comm.allReduce(send.data(), out.data(), count, type, op);
    check.bytes(check.step, out.data(), want.data(), bytes);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes);
    send.checkIntact(check, check.step + ": send buffer");
    recv.checkIntact(check, check.step + ": receive buffer");
  }
}

void checkReduceScatter(Communicator& comm, Checker& check, Mode mode, DataType type, ReduceOp op,
                        size_t count, int salt) {
  const int n = comm.size();
  const int rank = comm.rank();
  const size_t width = dataTypeSize(type);
  const size_t bytes = count * width;
  const std::vector<uint8_t> input = reductionInput(rank, count * n, type, op, salt);
  const std::vector<uint8_t> full = reductionExpected(n, count * n, type, op, salt);
  const uint8_t* want = full.data() + rank * bytes;
  for (bool inPlace : {false, true}) {
    check.step = describe("reduceScatter", mode, type, count, inPlace, std::string(toString(op)));
    Buffer send(memoryOf(mode, rank, true), bytes * n, width);
    Buffer recv(memoryOf(mode, rank, false), bytes, width);
    std::copy(input.begin(), input.end(), send.data());
    uint8_t* out = inPlace ? send.data() + rank * bytes : recv.data();
    comm.reduceScatter(send.data(), out, count, type, op);
    check.bytes(check.step, out, want, bytes);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), input.data(), bytes * n);
    send.checkIntact(check, check.step + ": send buffer");
    recv.checkIntact(check, check.step + ": receive buffer");
  }
}

void checkAllGather(Communicator& comm, Checker& check, Mode mode, DataType type, size_t count,
                    int salt) {
  const int n = comm.size();
  const int rank = comm.rank();
  const size_t width = dataTypeSize(type);
  const size_t bytes = count * width;
  std::vector<uint8_t> want;
  for (int q = 0; q < n; ++q) {
    const std::vector<uint8_t> block = pattern(q, 0, bytes, salt);
    want.insert(want.end(), block.begin(), block.end());
  }
  const std::vector<uint8_t> mine = pattern(rank, 0, bytes, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("allGather", mode, type, count, inPlace);
    Buffer send(memoryOf(mode, rank, true), bytes, width);
    Buffer recv(memoryOf(mode, rank, false), bytes * n, width);
    uint8_t* in = inPlace ? recv.data() + rank * bytes : send.data();
    std::copy(mine.begin(), mine.end(), in);
    comm.allGather(in, recv.data(), count, type);
    check.bytes(check.step, recv.data(), want.data(), bytes * n);
    if (!inPlace) check.bytes(check.step + ": send buffer", send.data(), mine.data(), bytes);
    send.checkIntact(check, check.step + ": send buffer");
    recv.checkIntact(check, check.step + ": receive buffer");
  }
}

void checkBroadcast(Communicator& comm, Checker& check, Mode mode, DataType type, size_t count,
                    int root, int salt) {
  const int rank = comm.rank();
  const size_t width = dataTypeSize(type);
  const size_t bytes = count * width;
  const std::vector<uint8_t> want = pattern(root, 0, bytes, salt);
  for (bool inPlace : {false, true}) {
    check.step = describe("broadcast", mode, type, count, inPlace, "root " + std::to_string(root));
    Buffer send(memoryOf(mode, rank, true), bytes, width);
    Buffer recv(memoryOf(mode, rank, false), bytes, width);
    if (rank == root) std::copy(want.begin(), want.end(), send.data());
    Buffer& out = inPlace ? send : recv;
    comm.broadcast(send.data(), out.data(), count, type, root);
    check.bytes(check.step, out.data(), want.data(), bytes);
    if (!inPlace && rank == root) {
      check.bytes(check.step + ": send buffer", send.data(), want.data(), bytes);
    }
    send.checkIntact(check, check.step + ": send buffer");
    recv.checkIntact(check, check.step + ": receive buffer");
  }
}

/// Every type and operator of both reductions, every root of broadcast, all over registered
/// memory at the small counts.
void checkEverything(Communicator& comm, Checker& check, int& salt) {
  constexpr DataType kMovedTypes[] = {DataType::kInt8, DataType::kFloat16, DataType::kFloat64};
  for (int t = 0; t < kDataTypeCount; ++t) {
    for (int o = 0; o < kReduceOpCount; ++o) {
      if (!acceptsOp(static_cast<DataType>(t), static_cast<ReduceOp>(o))) continue;
      for (size_t count : kCounts) {
        const auto type = static_cast<DataType>(t);
        const auto op = static_cast<ReduceOp>(o);
        checkAllReduce(comm, check, Mode::kRegistered, type, op, count, salt++);
        checkReduceScatter(comm, check, Mode::kRegistered, type, op, count, salt++);
      }
    }
  }
  for (DataType type : kMovedTypes) {
    for (size_t count : kCounts) {
      checkAllGather(comm, check, Mode::kRegistered, type, count, salt++);
      for (int root = 0; root < comm.size(); ++root) {
        checkBroadcast(comm, check, Mode::kRegistered, type, count, root, salt++);
      }
    }
  }
}

/// Each collective in each mode at 1 and 1000 elements and at a count of several MiB that no
/// rank count divides.
void checkModes(Communicator& comm, Checker& check, int& salt) {
  const int n = comm.size();
  constexpr Mode kModes[] = {Mode::kRegistered, Mode::kSubBuffer, Mode::kMixedRanks,
                             Mode::kRegisteredIn, Mode::kRegisteredOut};
  for (Mode mode : kModes) {
    for (size_t count : {size_t{1}, size_t{1000}}) {
      checkAllReduce(comm, check, mode, DataType::kFloat32, ReduceOp::kSum, count, salt++);
      checkAllReduce(comm, check, mode, DataType::kBFloat16, ReduceOp::kAvg, count, salt++);
      checkReduceScatter(comm, check, mode, DataType::kInt32, ReduceOp::kMax, count, salt++);
      checkAllGather(comm, check, mode, DataType::kFloat16, count, salt++);
      checkBroadcast(comm, check, mode, DataType::kInt64, count, n - 1, salt++);
    }
    checkAllReduce(comm, check, mode, DataType::kFloat32, ReduceOp::kSum, kLarge, salt++);
    checkReduceScatter(comm, check, mode, DataType::kFloat32, ReduceOp::kSum, kLarge / n, salt++);
    checkAllGather(comm, check, mode, DataType::kUint8, kLarge, salt++);
    checkBroadcast(comm, check, mode, DataType::kInt8, kLarge, n / 2, salt++);
  }
  // The other large shapes of the reductions in registered memory: a half type and avg.
  checkAllReduce(comm, check, Mode::kRegistered, DataType::kBFloat16, ReduceOp::kMax, kLarge,
                 salt++);
  checkAllReduce(comm, check, Mode::kSubBuffer, DataType::kInt64, ReduceOp::kAvg, kLarge, salt++);
  checkReduceScatter(comm, check, Mode::kSubBuffer, DataType::kFloat16, ReduceOp::kProd, kLarge / n,
                     salt++);
}

/// 50 rounds of allocate, allReduce, deallocate of the same size: the allocator is likely to
/// hand out the same addresses again, but each round's memory is a new allocation with values
/// no other round has, so a peer that kept reading an earlier round's mapping sees wrong
/// values.
void checkReallocation(Communicator& comm, Checker& check) {
  constexpr size_t kCount = 300007;  // 1.2 MB of float32: above any default threshold.
  constexpr int kRounds = 50;
  const size_t bytes = kCount * sizeof(float);
  // Rank q's element i in round k: (5q + 3i) % 7 + 8k. Sums stay far below 2^24: exact.
  auto value = [](int q, size_t i, int round) {
    return static_cast<float>((q * 5 + i * 3) % 7 + static_cast<size_t>(round) * 8);
  };
  std::vector<float> input(kCount);
  std::vector<float> want(kCount);
  for (int round = 0; round < kRounds; ++round) {
    const bool inPlace = round % 2 == 1;
    check.step = describe("allReduce", Mode::kRegistered, DataType::kFloat32, kCount, inPlace,
                          "sum, reallocation round " + std::to_string(round));
    for (size_t i = 0; i < kCount; ++i) {
      input[i] = value(comm.rank(), i, round);
      float sum = 0;
      for (int q = 0; q < comm.size(); ++q) sum += value(q, i, round);
      want[i] = sum;
    }
    auto* send = static_cast<float*>(allocate(bytes));
    float* recv = inPlace ? send : static_cast<float*>(allocate(bytes));
    std::copy(input.begin(), input.end(), send);
    if (!inPlace) std::memset(recv, kPoison, bytes);
    comm.allReduce(send, recv, kCount, DataType::kFloat32, ReduceOp::kSum);
    check.bytes(check.step, reinterpret_cast<const uint8_t*>(recv),
                reinterpret_cast<const uint8_t*>(want.data()), bytes);
    if (!inPlace) {
      check.bytes(check.step + ": send buffer", reinterpret_cast<const uint8_t*>(send),
                  reinterpret_cast<const uint8_t*>(input.data()), bytes);
      deallocate(recv);
    }
    deallocate(send);
  }
}

}  // namespace

void checkRegistered(Communicator& comm, Checker& check) {
  int salt = 7;
  checkEverything(comm, check, salt);
  checkModes(comm, check, salt);
  checkReallocation(comm, check);
}

}  // namespace grove::proc
