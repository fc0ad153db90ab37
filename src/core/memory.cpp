// grove::allocate: memory backed by an anonymous shared-memory file (memfd), so that the
// other processes of a communicator on this host can map it (transport/peer_memory.hpp).
//
// A memfd rather than a named POSIX segment: nothing is left in /dev/shm when a process is
// killed, and no name has to be agreed on. Peers open it as /proc/<pid>/fd/<fd>, which the
// kernel allows to processes that may ptrace this one (the same user). The registry maps
// each allocation's start address to its file; lookups take a shared lock (no system call)
// and happen once per large call.
#include "grove/memory.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "core/memory_registry.hpp"
#include "grove/error.hpp"

namespace grove {
namespace {

struct Allocation {
  size_t bytes = 0;        // What the caller asked for.
  size_t mappedBytes = 0;  // Rounded up to whole pages.
  int fd = -1;
  uint64_t id = 0;
  uint64_t inode = 0;
};

struct Registry {
  std::shared_mutex mutex;
  std::map<uintptr_t, Allocation> byAddress;
  std::atomic<uint64_t> nextId{1};
};

Registry& registry() {
  static Registry* instance = new Registry;  // Never destroyed: used until the very end.
  return *instance;
}

[[noreturn]] void throwSystem(const char* what, size_t bytes, int error) {
  throw Error(ErrorCode::kSystemError, fmt::format("grove::allocate({} bytes): {} failed: {}",
                                                   bytes, what, std::strerror(error)));
}

}  // namespace

void* allocate(size_t bytes) {
  if (bytes == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "grove::allocate: bytes is 0 (expected at least 1 byte)");
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - page) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove::allocate: bytes {} is too large", bytes));
  }
  const size_t mapped = (bytes + page - 1) / page * page;
  const int fd = memfd_create("grove-mem", MFD_CLOEXEC);
  if (fd < 0) throwSystem("memfd_create", bytes, errno);
  struct stat st {};
  if (ftruncate(fd, static_cast<off_t>(mapped)) != 0 || fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    throwSystem("ftruncate", bytes, error);
  }
  // Populated now: a collective must never fault pages in on its latency path.
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    throwSystem("mmap", bytes, error);
  }
  Registry& r = registry();
  Allocation allocation{bytes, mapped, fd, r.nextId.fetch_add(1), static_cast<uint64_t>(st.st_ino)};
  std::unique_lock lock(r.mutex);
  r.byAddress.emplace(reinterpret_cast<uintptr_t>(base), allocation);
  return base;
}

void deallocate(void* pointer) {
  if (pointer == nullptr) return;
  Registry& r = registry();
  Allocation allocation;
  {
    std::unique_lock lock(r.mutex);
    auto it = r.byAddress.find(reinterpret_cast<uintptr_t>(pointer));
    if (it == r.byAddress.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("grove::deallocate: pointer {} was not returned by "
                              "grove::allocate (or was freed already)",
                              pointer));
    }
    allocation = it->second;
    r.byAddress.erase(it);
  }
  munmap(pointer, allocation.mappedBytes);
  close(allocation.fd);
}

bool isRegistered(const void* pointer, size_t bytes) {
  return detail::describeBuffer(pointer, bytes).region != 0;
}

namespace detail {

transport::BufferDescriptor describeBuffer(const void* pointer, size_t bytes) {
  transport::BufferDescriptor buffer;
  if (pointer == nullptr) return buffer;
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  buffer.address = address;
  buffer.bytes = bytes;
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.byAddress.upper_bound(address);
  if (it == r.byAddress.begin()) return buffer;
  it = std::prev(it);
  const Allocation& allocation = it->second;
  const uintptr_t offset = address - it->first;
  if (offset > allocation.bytes || bytes > allocation.bytes - offset) return buffer;
  buffer.region = allocation.id;
  buffer.offset = offset;
  buffer.inode = allocation.inode;
  buffer.fd = allocation.fd;
  return buffer;
}

}  // namespace detail
}  // namespace grove
