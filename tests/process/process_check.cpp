// process_check: one rank of a multi-process job that runs every collective and checks every
// value exactly. Started by any launcher (`grove run`, torchrun-style variables, mpirun,
// srun); joins through Communicator::fromEnv(). `process_check registered` runs the
// registered-memory suite (check_registered.cpp) instead of the others.
//
// Why a program and not a GoogleTest: the point is the processes — the launcher's variables,
// the rendezvous store, shared memory or TCP between address spaces — so each rank must be a
// process of its own started by the launcher under test. The contract with the test scripts is
// one line per rank: `rank R ok: ...` on stdout and exit 0, or `rank R FAILED: ...` on stderr
// and exit 1 (before a rank is known: `process_check FAILED: ...`).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "check_support.hpp"
#include "core/comm_state.hpp"
#include "support/reference.hpp"

namespace grove::proc {

void Checker::bytes(const std::string& what, const uint8_t* got, const uint8_t* want, size_t size) {
  ++checks_;
  for (size_t i = 0; i < size; ++i) {
    if (got[i] != want[i]) {
      fail(what + ": byte " + std::to_string(i) + " of " + std::to_string(size) + " is " +
           std::to_string(got[i]) + ", expected " + std::to_string(want[i]));
      return;
    }
  }
}

void Checker::equal(const std::string& what, long long got, long long want) {
  ++checks_;
  if (got != want) {
    fail(what + ": got " + std::to_string(got) + ", expected " + std::to_string(want));
  }
}

void Checker::fail(const std::string& message) {
  if (failures_++ == 0) first_ = message;
}

GuardedBuffer::GuardedBuffer(size_t size, uint8_t fill)
    : size_(size), storage_(size + 2 * kGuard, kGuardByte) {
  std::fill(storage_.begin() + kGuard, storage_.begin() + kGuard + size, fill);
}

void GuardedBuffer::checkGuards(Checker& check, const std::string& what) const {
  for (size_t i = 0; i < kGuard; ++i) {
    if (storage_[i] != kGuardByte || storage_[kGuard + size_ + i] != kGuardByte) {
      check.fail(what + ": a byte next to the buffer was overwritten");
      return;
    }
  }
}

namespace {
bool compressiblePatterns = false;
}  // namespace

void useCompressiblePatterns() { compressiblePatterns = true; }

uint8_t patternByte(int rank, size_t pos, int salt) {
  if (compressiblePatterns && pos % 2 == 1) {
    return static_cast<uint8_t>(0x3C + (static_cast<size_t>(rank) + pos / 2 + salt) % 4);
  }
  const uint8_t b = static_cast<uint8_t>(rank * 131 + pos * 7 + (pos >> 8) * 3 + salt * 29 + 1);
  return b == kPoison ? 0x5A : b;
}

std::vector<uint8_t> pattern(int rank, size_t offset, size_t size, int salt) {
  std::vector<uint8_t> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = patternByte(rank, offset + i, salt);
  return out;
}

double reductionValue(int rank, size_t i, ReduceOp op, int salt) {
  const size_t r = static_cast<size_t>(rank);
  const size_t s = static_cast<size_t>(salt);
  switch (op) {
    case ReduceOp::kProd: {
      // Powers of two and -1: products of up to 8 ranks are exact even in bfloat16.
      static constexpr double kFactors[] = {1, 2, -1, 1};
      return kFactors[(r + i + s) % 4];
    }
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      return static_cast<double>((r * 7 + i * 13 + s) % 101) - 50;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      // Seven-bit patterns: in range of every integer type.
      return static_cast<double>((r * 29 + i * 11 + s) % 128);
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      break;
  }
  return static_cast<double>((r * 5 + i * 3 + s) % 7) - 3;
}

std::vector<uint8_t> reductionInput(int rank, size_t count, DataType type, ReduceOp op, int salt) {
  std::vector<uint8_t> out(count * dataTypeSize(type));
  for (size_t i = 0; i < count; ++i) {
    test::storeElement(out.data(), i, type, reductionValue(rank, i, op, salt));
  }
  return out;
}

std::vector<uint8_t> reductionExpected(int nranks, size_t count, DataType type, ReduceOp op,
                                       int salt) {
  std::vector<uint8_t> acc = reductionInput(0, count, type, op, salt);
  for (int q = 1; q < nranks; ++q) {
    const std::vector<uint8_t> in = reductionInput(q, count, type, op, salt);
    test::referenceReduce(acc.data(), acc.data(), in.data(), count, type, op);
  }
  test::referenceFinalize(acc.data(), count, type, op, nranks);
  return acc;
}

}  // namespace grove::proc

int main(int argc, char** argv) {
  using grove::Communicator;
  // `process_check registered` runs the registered-memory suite alone; no argument runs the
  // others.
  const std::string suite = argc > 1 ? argv[1] : "";
  if (!suite.empty() && suite != "registered" && suite != "compressed") {
    std::fprintf(stderr,
                 "process_check FAILED: unknown suite '%s' (expected none, registered or "
                 "compressed)\n",
                 suite.c_str());
    return 1;
  }
  grove::Communicator comm;
  try {
    comm = Communicator::fromEnv();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "process_check FAILED: init: %s\n", e.what());
    return 1;
  }
  grove::proc::Checker check(comm.rank());
  try {
    if (suite == "registered") {
      grove::proc::checkRegistered(comm, check);
    } else if (suite == "compressed") {
      grove::proc::checkCompressed(comm, check);
    } else {
      grove::proc::checkReductions(comm, check);
      grove::proc::checkMovement(comm, check);
      grove::proc::checkGroups(comm, check);
    }
    check.step = "final barrier";
    comm.barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d FAILED: %s: %s\n", comm.rank(), check.step.c_str(), e.what());
    std::fflush(stderr);
    comm.abort();
    return 1;
  }
  if (!check.ok()) {
    std::fprintf(stderr, "rank %d FAILED: %s (%lld of %lld checks failed)\n", comm.rank(),
                 check.firstFailure().c_str(), check.failures(), check.checks());
    return 1;
  }
  const char* job = std::getenv("GROVE_JOB_ID");
  std::printf("rank %d ok: %d ranks, transport %s, %lld checks, job %s\n", comm.rank(), comm.size(),
              std::string(comm.state().transport().name()).c_str(), check.checks(),
              job != nullptr && *job != '\0' ? job : "-");
  return 0;
}
