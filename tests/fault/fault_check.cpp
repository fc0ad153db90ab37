// fault_check: one rank of a fault-injection trial (tests/fault/fault_test.py).
//
// It joins the job from the launcher's environment, says "ready", then runs one collective
// in a loop, checking every result, until a call fails — which it must, since the test kills
// or stops a peer. It then prints one line the test reads:
//   error <rank> <code> <detected_ns> <iterations> <message>
// where detected_ns is CLOCK_MONOTONIC when the error surfaced (the same clock the test
// reads when it sends the signal), and exits 3. A wrong result prints "corrupt ..." and
// exits 4: a dying peer must cost an error, never a wrong answer. With ITERATIONS it stops
// after that many checked calls instead and prints "done <rank> <iterations>" (exit 0): for
// faults that must not fail the job (a slow peer).
//
// Usage: fault_check COLLECTIVE BYTES [ITERATIONS]
//        (allreduce broadcast allgather reducescatter alltoall)
// With FAULT_CHECK_REGISTERED=1 the buffers come from grove::allocate, so large calls take
// the direct path (peers read this rank's buffers in place) and a death lands in it.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "grove/communicator.hpp"
#include "grove/error.hpp"
#include "grove/memory.hpp"

namespace {

int64_t monotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// `elements` int32 values, from grove::allocate or the heap.
class Buffer {
 public:
  Buffer(size_t elements, int32_t value, bool registered) : registered_(registered) {
    if (registered_) {
      data_ = static_cast<int32_t*>(grove::allocate(elements * sizeof(int32_t)));
    } else {
      heap_.resize(elements);
      data_ = heap_.data();
    }
    for (size_t i = 0; i < elements; ++i) data_[i] = value;
  }
  ~Buffer() {
    if (registered_) grove::deallocate(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  int32_t* data() { return data_; }
  int32_t operator[](size_t i) const { return data_[i]; }

 private:
  bool registered_;
  std::vector<int32_t> heap_;
  int32_t* data_ = nullptr;
};

// Every element of the result must equal `expected`.
bool allEqual(const Buffer& values, size_t count, int32_t expected) {
  for (size_t i = 0; i < count; ++i) {
    if (values[i] != expected) return false;
  }
  return true;
}

// One token per error code, for the test's line parser.
const char* codeName(grove::ErrorCode code) {
  switch (code) {
    case grove::ErrorCode::kRemoteError:
      return "RemoteError";
    case grove::ErrorCode::kTimeout:
      return "Timeout";
    case grove::ErrorCode::kInvalidUsage:
      return "InvalidUsage";
    case grove::ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case grove::ErrorCode::kSystemError:
      return "SystemError";
    default:
      return "Other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: fault_check COLLECTIVE BYTES [ITERATIONS]\n");
    return 2;
  }
  const std::string collective = argv[1];
  const size_t count = std::max<size_t>(1, std::strtoull(argv[2], nullptr, 10) / 4);
  const uint64_t iterations = argc == 4 ? std::strtoull(argv[3], nullptr, 10) : UINT64_MAX;
  try {
    grove::Communicator comm = grove::Communicator::fromEnv();
    const int rank = comm.rank();
    const int n = comm.size();
    const char* registered = std::getenv("FAULT_CHECK_REGISTERED");
    const bool useRegistered = registered != nullptr && std::string(registered) == "1";
    Buffer in(count * n, rank + 1, useRegistered);
    Buffer out(count * n, 0, useRegistered);
    // Announce readiness after two calls: connections are made on first use, and the trial
    // is about failures in the middle of the traffic, not during connection set-up.
    for (uint64_t iteration = 0;; ++iteration) {
      if (iteration == iterations) {
        std::printf("done %d %llu\n", rank, static_cast<unsigned long long>(iteration));
        return 0;
      }
      if (iteration == 2) {
        std::printf("ready %d\n", rank);
        std::fflush(stdout);
      }
      try {
        bool ok = true;
        if (collective == "allreduce") {
          comm.allReduce(in.data(), out.data(), count, grove::DataType::kInt32,
                         grove::ReduceOp::kSum);
          ok = allEqual(out, count, n * (n + 1) / 2);
        } else if (collective == "broadcast") {
          comm.broadcast(in.data(), out.data(), count, grove::DataType::kInt32, 0);
          ok = allEqual(out, count, 1);
        } else if (collective == "allgather") {
          comm.allGather(in.data(), out.data(), count, grove::DataType::kInt32);
          for (int r = 0; r < n && ok; ++r) {
            ok = out[r * count] == r + 1 && out[(r + 1) * count - 1] == r + 1;
          }
        } else if (collective == "reducescatter") {
          comm.reduceScatter(in.data(), out.data(), count, grove::DataType::kInt32,
                             grove::ReduceOp::kSum);
          ok = allEqual(out, count, n * (n + 1) / 2);
        } else if (collective == "alltoall") {
          comm.allToAll(in.data(), out.data(), count, grove::DataType::kInt32);
          for (int r = 0; r < n && ok; ++r) ok = out[r * count] == r + 1;
        } else {
          std::fprintf(stderr, "fault_check: unknown collective '%s'\n", collective.c_str());
          return 2;
        }
        if (!ok) {
          std::printf("corrupt %d %s iteration %llu\n", rank, collective.c_str(),
                      static_cast<unsigned long long>(iteration));
          std::fflush(stdout);
          return 4;
        }
      } catch (const grove::Error& error) {
        const int64_t detected = monotonicNs();
        std::string message = error.what();
        for (char& c : message) {
          if (c == '\n') c = ' ';
        }
        std::printf("error %d %s %lld %llu %s\n", rank, codeName(error.code()),
                    static_cast<long long>(detected), static_cast<unsigned long long>(iteration),
                    message.c_str());
        std::fflush(stdout);
        return 3;
      }
    }
  } catch (const std::exception& error) {
    std::printf("init-error %s\n", error.what());
    std::fflush(stdout);
    return 5;
  }
}
