// grove::allocate / deallocate / isRegistered and their C twins groveMemAlloc / groveMemFree:
// the memory that local peers may read in place (include/grove/memory.hpp).
//
// Why these matter beyond "malloc works": a collective decides from isRegistered() whether a
// buffer can be mapped by its peers, so a range that is reported registered but reaches past
// its allocation (or into a freed one) would let a peer read memory that is not the caller's
// buffer. The bounds are therefore tested byte-exactly: the last byte is in, one past is out,
// a freed allocation is out. Errors are tested for their code and for naming the argument.
#include "grove/memory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grove/error.hpp"
#include "grove/grove.h"

namespace grove {
namespace {

size_t pageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

/// Runs `body`, expecting a grove::Error with `code` whose message contains every `parts`.
template <typename Body>
void expectError(Body body, ErrorCode code, std::initializer_list<std::string> parts) {
  try {
    body();
    ADD_FAILURE() << "no grove::Error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' does not mention '" << part << "'";
    }
  }
}

/// Frees an allocation at the end of a scope (tests that fail half-way leak nothing).
struct Allocation {
  explicit Allocation(size_t size) : bytes(size), data(static_cast<uint8_t*>(allocate(size))) {}
  ~Allocation() {
    if (data != nullptr) deallocate(data);
  }
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  size_t bytes;
  uint8_t* data;
};

TEST(Memory, AllocationsArePageAlignedZeroFilledAndWritable) {
  for (size_t bytes :
       {size_t{1}, size_t{7}, pageSize() - 1, pageSize(), pageSize() + 1, (size_t{1} << 20) + 3}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    Allocation a(bytes);
    ASSERT_NE(a.data, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % pageSize(), 0u);
    size_t nonZero = 0;
    for (size_t i = 0; i < bytes; ++i) nonZero += a.data[i] != 0;
    EXPECT_EQ(nonZero, 0u);
    for (size_t i = 0; i < bytes; ++i) a.data[i] = static_cast<uint8_t>(i * 31 + 7);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += a.data[i] != static_cast<uint8_t>(i * 31 + 7);
    EXPECT_EQ(wrong, 0u);
  }
}

TEST(Memory, DistinctAllocationsDoNotOverlap) {
  Allocation a(100), b(100), c(pageSize() * 3);
  std::memset(a.data, 1, a.bytes);
  std::memset(b.data, 2, b.bytes);
  std::memset(c.data, 3, c.bytes);
  EXPECT_EQ(a.data[99], 1);
  EXPECT_EQ(b.data[0], 2);
  EXPECT_EQ(b.data[99], 2);
  EXPECT_EQ(c.data[0], 3);
  EXPECT_EQ(c.data[pageSize() * 3 - 1], 3);
}

TEST(Memory, RegisteredRangesAreExactlyTheAllocation) {
  constexpr size_t kBytes = 1000;  // Not a page multiple: the page's tail is not the caller's.
  Allocation a(kBytes);
  const uint8_t* p = a.data;
  EXPECT_TRUE(isRegistered(p, kBytes));
  EXPECT_TRUE(isRegistered(p, 1));
  EXPECT_TRUE(isRegistered(p, 0));
  EXPECT_TRUE(isRegistered(p + 1, kBytes - 1));  // A sub-buffer at an odd offset.
  EXPECT_TRUE(isRegistered(p + 333, 111));       // One in the middle.
  EXPECT_TRUE(isRegistered(p + kBytes - 1, 1));  // The last byte.
  EXPECT_FALSE(isRegistered(p, kBytes + 1));     // One past the end.
  EXPECT_FALSE(isRegistered(p + kBytes, 1));     // Starting one past the end.
  EXPECT_FALSE(isRegistered(p + 1, kBytes));     // Shifted by one: ends one past.
  EXPECT_FALSE(isRegistered(p, pageSize()));     // The rest of the page is not the caller's.
  EXPECT_FALSE(isRegistered(p - 1, 2));          // Starting before the allocation.
  EXPECT_FALSE(isRegistered(p, SIZE_MAX));       // No overflow in the bounds check.
  EXPECT_FALSE(isRegistered(p + 10, SIZE_MAX - 5));
}

TEST(Memory, OrdinaryMemoryAndNullAreNotRegistered) {
  std::vector<uint8_t> heap(4096);
  int onStack = 0;
  EXPECT_FALSE(isRegistered(heap.data(), heap.size()));
  EXPECT_FALSE(isRegistered(heap.data(), 1));
  EXPECT_FALSE(isRegistered(&onStack, sizeof(onStack)));
  EXPECT_FALSE(isRegistered(nullptr, 0));
  EXPECT_FALSE(isRegistered(nullptr, 8));
}

TEST(Memory, FreedMemoryIsNotRegistered) {
  uint8_t* p = static_cast<uint8_t*>(allocate(4096));
  ASSERT_TRUE(isRegistered(p, 4096));
  deallocate(p);
  EXPECT_FALSE(isRegistered(p, 4096));
  EXPECT_FALSE(isRegistered(p, 1));
  EXPECT_FALSE(isRegistered(p + 100, 1));
}

TEST(Memory, AllocatingZeroBytesIsAnInvalidArgument) {
  expectError([] { allocate(0); }, ErrorCode::kInvalidArgument, {"grove::allocate", "bytes", "0"});
}

TEST(Memory, AllocatingMoreThanTheAddressSpaceIsAnInvalidArgument) {
  expectError([] { allocate(SIZE_MAX); }, ErrorCode::kInvalidArgument,
              {"grove::allocate", "bytes", std::to_string(SIZE_MAX), "too large"});
}

TEST(Memory, FreeingNullDoesNothing) { EXPECT_NO_THROW(deallocate(nullptr)); }

TEST(Memory, FreeingTwiceIsAnInvalidArgument) {
  void* p = allocate(64);
  deallocate(p);
  expectError([p] { deallocate(p); }, ErrorCode::kInvalidArgument,
              {"grove::deallocate", "pointer", "freed already"});
}

TEST(Memory, FreeingForeignMemoryIsAnInvalidArgumentAndChangesNothing) {
  std::vector<uint8_t> heap(64);
  expectError([&] { deallocate(heap.data()); }, ErrorCode::kInvalidArgument,
              {"grove::deallocate", "pointer", "not returned by grove::allocate"});
  // A pointer inside an allocation is not the allocation: it stays registered and usable.
  Allocation a(256);
  expectError([&] { deallocate(a.data + 1); }, ErrorCode::kInvalidArgument,
              {"grove::deallocate", "pointer"});
  EXPECT_TRUE(isRegistered(a.data, 256));
  a.data[255] = 9;
  EXPECT_EQ(a.data[255], 9);
}

TEST(Memory, ThreadsAllocateAndFreeConcurrently) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::mutex mutex;
  std::set<uintptr_t> live;
  int overlaps = 0;
  int wrong = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = 1 + static_cast<size_t>((t * 977 + round * 131) % 9000);
        auto* p = static_cast<uint8_t*>(allocate(bytes));
        {
          std::lock_guard lock(mutex);
          overlaps += !live.insert(reinterpret_cast<uintptr_t>(p)).second;
        }
        std::memset(p, t + 1, bytes);
        if (!isRegistered(p, bytes) || p[bytes - 1] != t + 1) {
          std::lock_guard lock(mutex);
          ++wrong;
        }
        {
          std::lock_guard lock(mutex);
          live.erase(reinterpret_cast<uintptr_t>(p));
        }
        deallocate(p);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(wrong, 0);
}

// ---- the C API -------------------------------------------------------------------------------

std::string lastError() { return groveGetLastError(nullptr); }

TEST(MemoryCApi, AllocAndFreeRoundTrip) {
  void* p = nullptr;
  ASSERT_EQ(groveMemAlloc(&p, 12345), groveSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % pageSize(), 0u);
  EXPECT_TRUE(isRegistered(p, 12345));
  EXPECT_FALSE(isRegistered(p, 12346));
  auto* bytes = static_cast<uint8_t*>(p);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[12344], 0);
  bytes[12344] = 1;
  EXPECT_EQ(groveMemFree(p), groveSuccess);
  EXPECT_FALSE(isRegistered(p, 1));
}

TEST(MemoryCApi, NullPointerArgumentIsAnInvalidArgument) {
  EXPECT_EQ(groveMemAlloc(nullptr, 64), groveInvalidArgument);
  EXPECT_NE(lastError().find("ptr"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("NULL"), std::string::npos) << lastError();
}

TEST(MemoryCApi, ZeroSizeIsAnInvalidArgumentAndLeavesThePointer) {
  int marker = 0;
  void* p = &marker;
  EXPECT_EQ(groveMemAlloc(&p, 0), groveInvalidArgument);
  EXPECT_EQ(p, &marker);
  EXPECT_NE(lastError().find("groveMemAlloc"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("size is 0"), std::string::npos) << lastError();
}

TEST(MemoryCApi, FreeOfNullSucceeds) { EXPECT_EQ(groveMemFree(nullptr), groveSuccess); }

TEST(MemoryCApi, BadFreeIsAnInvalidArgument) {
  int onStack = 0;
  EXPECT_EQ(groveMemFree(&onStack), groveInvalidArgument);
  EXPECT_NE(lastError().find("groveMemFree"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("not returned by grove::allocate"), std::string::npos) << lastError();

  void* p = nullptr;
  ASSERT_EQ(groveMemAlloc(&p, 64), groveSuccess);
  ASSERT_EQ(groveMemFree(p), groveSuccess);
  EXPECT_EQ(groveMemFree(p), groveInvalidArgument);  // Twice.
  EXPECT_NE(lastError().find("freed already"), std::string::npos) << lastError();
}

TEST(MemoryCApi, CAndCppAllocationsAreInterchangeable) {
  void* p = nullptr;
  ASSERT_EQ(groveMemAlloc(&p, 100), groveSuccess);
  EXPECT_NO_THROW(deallocate(p));
  void* q = allocate(100);
  EXPECT_EQ(groveMemFree(q), groveSuccess);
}

}  // namespace
}  // namespace grove
