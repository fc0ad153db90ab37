// Public face of the reduction kernels: checks arguments, picks the instruction-set variant
// once per process (the best one the CPU runs) and forwards each call to it, so dispatch costs
// one predictable indirect call per buffer, never a branch per element.
//
// Throughput check (float32 sum of two 16 MiB inputs into a third buffer, -O3, best of 60 on
// the 2-core Xeon development VM, which was heavily shared at the time): about 9.5 GB/s of
// output for every variant, where memcpy of 16 MiB moves 14.5 GB/s; the kernel streams three
// buffers to memcpy's two, so it runs at memory speed. In cache (32 KiB): ~25 GB/s (AVX2 and
// AVX-512), ~17 GB/s (portable); float16 ~15 GB/s with F16C.
#include "exec/reduce.hpp"

#include <algorithm>
#include <string>

#include "exec/reduce_variants.hpp"
#include "grove/error.hpp"

namespace grove::exec {
namespace {

struct Variant {
  variants::ReduceFn reduce;
  variants::DivideFn divide;
};

constexpr Variant kPortable{variants::reducePortable, variants::dividePortable};
#if GROVE_X86_VARIANTS
constexpr Variant kAvx2{variants::reduceAvx2, variants::divideAvx2};
constexpr Variant kAvx512{variants::reduceAvx512, variants::divideAvx512};
constexpr common::IsaVariants<Variant> kVariants({&kPortable, &kAvx2, &kAvx512});
#else
constexpr common::IsaVariants<Variant> kVariants({&kPortable, nullptr, nullptr});
#endif

const Variant& bestVariant() {
  static const Variant& best = kVariants.best();
  return best;
}

void checkTypeOp(const char* call, DataType type, ReduceOp op) {
  if (!isValid(type)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(call) + ": type " +
                                                 std::to_string(static_cast<int>(type)) +
                                                 " is not a valid DataType (expected 0.." +
                                                 std::to_string(kDataTypeCount - 1) + ")");
  }
  if (!isValid(op)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(call) + ": op " +
                                                 std::to_string(static_cast<int>(op)) +
                                                 " is not a valid ReduceOp (expected 0.." +
                                                 std::to_string(kReduceOpCount - 1) + ")");
  }
  if (!acceptsOp(type, op)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(call) + ": op " + std::string(toString(op)) +
                    " needs an integer type, " + "got " + std::string(toString(type)));
  }
}

void checkBuffer(const char* call, const char* name, const void* p, size_t count) {
  if (p == nullptr && count > 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(call) + ": " + name + " is null but " +
                                                 "count is " + std::to_string(count));
  }
}

void checkRanks(const char* call, int nranks) {
  if (nranks < 1) {
    throw Error(ErrorCode::kInvalidArgument, std::string(call) + ": nranks is " +
                                                 std::to_string(nranks) + "; expected at least 1");
  }
}

void reduceOn(const Variant& v, const char* call, void* dst, const void* a, const void* b,
              size_t count, DataType type, ReduceOp op) {
  checkTypeOp(call, type, op);
  checkBuffer(call, "dst", dst, count);
  checkBuffer(call, "a", a, count);
  checkBuffer(call, "b", b, count);
  if (count > 0) v.reduce(dst, a, b, count, type, op);
}

void finalizeOn(const Variant& v, const char* call, void* data, size_t count, DataType type,
                ReduceOp op, int nranks) {
  checkTypeOp(call, type, op);
  checkBuffer(call, "data", data, count);
  checkRanks(call, nranks);
  if (op == ReduceOp::kAvg && count > 0) v.divide(data, count, type, nranks);
}

}  // namespace

void reduce(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op) {
  reduceOn(bestVariant(), "reduce", dst, a, b, count, type, op);
}

void finalize(void* data, size_t count, DataType type, ReduceOp op, int nranks) {
  finalizeOn(bestVariant(), "finalize", data, count, type, op, nranks);
}

void reduceFinalize(void* dst, const void* a, const void* b, size_t count, DataType type,
                    ReduceOp op, int nranks) {
  const Variant& v = bestVariant();
  const char* call = "reduceFinalize";
  checkTypeOp(call, type, op);
  checkBuffer(call, "dst", dst, count);
  checkBuffer(call, "a", a, count);
  checkBuffer(call, "b", b, count);
  checkRanks(call, nranks);
  if (count == 0) return;
  if (op != ReduceOp::kAvg) {
    v.reduce(dst, a, b, count, type, op);
    return;
  }
  // Reduce then divide block by block while the block is still in L1: the result is
  // bit-identical to reduce() followed by finalize() (halves round after each step).
  const size_t size = dataTypeSize(type);
  const size_t block = std::max<size_t>(1, 16384 / size);
  auto* d = static_cast<char*>(dst);
  const auto* x = static_cast<const char*>(a);
  const auto* y = static_cast<const char*>(b);
  for (size_t i = 0; i < count; i += block) {
    const size_t n = std::min(block, count - i);
    const size_t offset = i * size;
    v.reduce(d + offset, x + offset, y + offset, n, type, op);
    v.divide(d + offset, n, type, nranks);
  }
}

common::Isa reduceIsa() {
  static const common::Isa best = kVariants.bestIsa();
  return best;
}

void reduceWithIsa(common::Isa isa, void* dst, const void* a, const void* b, size_t count,
                   DataType type, ReduceOp op) {
  reduceOn(kVariants.require(isa, "reduceWithIsa"), "reduceWithIsa", dst, a, b, count, type, op);
}

void finalizeWithIsa(common::Isa isa, void* data, size_t count, DataType type, ReduceOp op,
                     int nranks) {
  finalizeOn(kVariants.require(isa, "finalizeWithIsa"), "finalizeWithIsa", data, count, type, op,
             nranks);
}

}  // namespace grove::exec
