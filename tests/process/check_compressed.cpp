// process_check, compressed links (`process_check compressed`, run with GROVE_COMPRESS=on
// over TCP): every collective on the three types the codec codes, every operator, in and out
// of place, with messages large enough to be compressed and data that shrinks; then values
// the codec must keep bit for bit (NaN payloads, infinities, -0, denormals), bits that do not
// shrink (sent raw, then not even tried for a while) and a type it passes through.
//
// Why the expected values are the uncompressed ones: the codec is lossless, so a compressed
// run must give exactly the bytes the other suites expect; any difference is a codec,
// framing or forwarding bug. process_test.py checks from the ranks' logs that messages were
// really compressed, passed on compressed and decoded.
#include <cstring>
#include <string>
#include <vector>

#include "check_support.hpp"

namespace grove::proc {
namespace {

// A prime: no rank count divides it, and each rank's share of a reduce-scatter or an
// allToAll block is still well above the smallest message compressed (4 KiB) on 5 ranks.
constexpr size_t kCount = 20011;
constexpr DataType kCodedTypes[] = {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16};

// Bit patterns of special values, per type: NaNs with payloads (quiet, negative), +inf, -inf,
// -0, the smallest denormal, a negative denormal.
std::vector<uint32_t> specialBits(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return {0x7FC00001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001, 0x807FFFFF};
    case DataType::kBFloat16:
      return {0x7FC1, 0xFFA5, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x807F};
    default:  // float16
      return {0x7E01, 0xFE55, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x83FF};
  }
}

// Rank `rank`'s compressible pattern with a special value at every fifth element.
std::vector<uint8_t> withSpecials(DataType type, int rank, size_t count, int salt) {
  const size_t size = dataTypeSize(type);
  std::vector<uint8_t> data = pattern(rank, 0, count * size, salt);
  const std::vector<uint32_t> specials = specialBits(type);
  for (size_t i = 0; i < count; i += 5) {
    const uint32_t bits = specials[(i / 5 + static_cast<size_t>(rank)) % specials.size()];
    std::memcpy(data.data() + i * size, &bits, size);  // little-endian: the low bytes
  }
  return data;
}

void checkSpecialValues(Communicator& comm, Checker& check, DataType type, int salt) {
  const int n = comm.size();
  const size_t bytes = kCount * dataTypeSize(type);
  const int root = n - 1;
  check.step = "broadcast of special values " + std::string(toString(type));
  const std::vector<uint8_t> want = withSpecials(type, root, kCount, salt);
  GuardedBuffer buffer(bytes);
  if (comm.rank() == root) std::memcpy(buffer.data(), want.data(), bytes);
  comm.broadcast(buffer.data(), buffer.data(), kCount, type, root);
  check.bytes(check.step, buffer.data(), want.data(), bytes);
  buffer.checkGuards(check, check.step);

  check.step = "allGather of special values " + std::string(toString(type));
  std::vector<uint8_t> all;
  for (int q = 0; q < n; ++q) {
    const std::vector<uint8_t> block = withSpecials(type, q, kCount, salt);
    all.insert(all.end(), block.begin(), block.end());
  }
  const std::vector<uint8_t> mine = withSpecials(type, comm.rank(), kCount, salt);
  GuardedBuffer gathered(bytes * n);
  comm.allGather(mine.data(), gathered.data(), kCount, type);
  check.bytes(check.step, gathered.data(), all.data(), bytes * n);
  gathered.checkGuards(check, check.step);
}

// Uniform random bits (xorshift64*, seeded per rank): nothing to gain, so sent raw.
std::vector<uint8_t> randomBits(int rank, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank + 1);
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    out[i] = static_cast<uint8_t>((x * 0x2545F4914F6CDD1Dull) >> 56);
  }
  return out;
}

void checkIncompressible(Communicator& comm, Checker& check) {
  const int n = comm.size();
  const size_t bytes = kCount * 4;
  std::vector<uint8_t> all;
  for (int q = 0; q < n; ++q) {
    const std::vector<uint8_t> block = randomBits(q, bytes);
    all.insert(all.end(), block.begin(), block.end());
  }
  const std::vector<uint8_t> mine = randomBits(comm.rank(), bytes);
  // Enough calls that every link gives up trying and later tries again.
  for (int round = 0; round < 12; ++round) {
    check.step = "allGather of random float32 bits, round " + std::to_string(round);
    GuardedBuffer gathered(bytes * n);
    comm.allGather(mine.data(), gathered.data(), kCount, DataType::kFloat32);
    check.bytes(check.step, gathered.data(), all.data(), bytes * n);
    gathered.checkGuards(check, check.step);
  }
}

}  // namespace

void checkCompressed(Communicator& comm, Checker& check) {
  useCompressiblePatterns();
  const int n = comm.size();
  int salt = 3;
  for (DataType type : kCodedTypes) {
    for (int o = 0; o < kReduceOpCount; ++o) {
      const auto op = static_cast<ReduceOp>(o);
      if (!acceptsOp(type, op)) continue;
      checkAll(comm, check, type, op, kCount, salt);
      salt += 3;
    }
    checkBroadcast(comm, check, type, kCount, salt % n, salt);
    checkAllGather(comm, check, type, kCount, salt + 1);
    checkAllToAll(comm, check, type, kCount, salt + 2);
    checkGather(comm, check, type, kCount, (salt + 1) % n, salt + 3);
    checkScatter(comm, check, type, kCount, (salt + 2) % n, salt + 4);
    checkSpecialValues(comm, check, type, salt + 5);
    salt += 6;
  }
  checkIncompressible(comm, check);
  // A type the codec passes through: never marked compressed, moved as it is.
  checkAll(comm, check, DataType::kInt32, ReduceOp::kSum, kCount, salt);
}

}  // namespace grove::proc
