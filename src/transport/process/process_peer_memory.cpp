#include "transport/process/process_peer_memory.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.hpp"
#include "grove/error.hpp"

namespace grove::transport {
namespace {

// Allocations a rank keeps mapped per communicator. A call maps at most two per peer, so the
// ones in use are always the most recent; older ones (freed by their owner, most likely) are
// unmapped so that a program that allocates in a loop does not pile up mappings.
constexpr size_t kMinCachedMappings = 128;

// process_vm_readv may copy less than asked (it stops at the first page it cannot read);
// errno says why when it copies nothing.
ssize_t readOnce(pid_t pid, uint64_t address, void* to, size_t bytes) {
  iovec local{to, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

}  // namespace

ProcessPeerMemory::ProcessPeerMemory(int rank, int size, ShmDomain* shm)
    : rank_(rank), shm_(shm), pids_(static_cast<size_t>(size), -1) {}

ProcessPeerMemory::~ProcessPeerMemory() {
  for (auto& [key, mapping] : mapped_) munmap(mapping.base, mapping.bytes);
}

bool ProcessPeerMemory::canReadAllPeers() {
  if (readable_ >= 0) return readable_ == 1;
  readable_ = 1;
  for (int q = 0; q < static_cast<int>(pids_.size()) && readable_ == 1; ++q) {
    if (q == rank_) continue;
    std::optional<PeerProcess> peer = shm_ != nullptr ? shm_->peerProcess(q) : std::nullopt;
    if (!peer) {
      log::info(rank_, "direct: rank {} is not a process this rank can read", q);
      readable_ = 0;
      break;
    }
    int32_t seen = 0;
    if (readOnce(peer->pid, peer->pidAddress, &seen, sizeof seen) != sizeof seen ||
        seen != peer->pid) {
      log::info(rank_, "direct: cannot read the memory of rank {} (pid {}): {}", q, peer->pid,
                std::strerror(errno));
      readable_ = 0;
      break;
    }
    pids_[q] = peer->pid;
  }
  return readable_ == 1;
}

const char* ProcessPeerMemory::map(int peer, const BufferDescriptor& buffer) {
  if (buffer.region == 0) return nullptr;
  const auto key = std::make_pair(peer, buffer.region);
  auto it = mapped_.find(key);
  if (it == mapped_.end()) {
    const std::string path = fmt::format("/proc/{}/fd/{}", pids_[peer], buffer.fd);
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != buffer.inode) {
      const int error = fd < 0 ? errno : 0;
      if (fd >= 0) close(fd);
      throw Error(
          ErrorCode::kRemoteError,
          fmt::format("cannot map rank {}'s grove allocation (fd {} of pid {}): {}", peer,
                      buffer.fd, pids_[peer],
                      error != 0 ? std::strerror(error) : "it was freed while this call used it"));
    }
    const size_t bytes = static_cast<size_t>(st.st_size);
    void* base = bytes == 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    const int error = errno;
    close(fd);
    if (base == MAP_FAILED) {
      throw Error(ErrorCode::kSystemError,
                  fmt::format("cannot map rank {}'s grove allocation of {} bytes: {}", peer, bytes,
                              std::strerror(error)));
    }
    evict();
    it = mapped_.emplace(key, Mapped{static_cast<char*>(base), bytes, 0}).first;
  }
  Mapped& mapping = it->second;
  mapping.lastUse = ++uses_;
  if (buffer.offset > mapping.bytes || buffer.bytes > mapping.bytes - buffer.offset) {
    throw Error(ErrorCode::kRemoteError,
                fmt::format("rank {} described a buffer of {} bytes at offset {} of an "
                            "allocation of {} bytes",
                            peer, buffer.bytes, buffer.offset, mapping.bytes));
  }
  return mapping.base + buffer.offset;
}

void ProcessPeerMemory::evict() {
  const size_t bound = std::max(kMinCachedMappings, 4 * pids_.size());
  while (mapped_.size() >= bound) {
    auto oldest = std::min_element(
        mapped_.begin(), mapped_.end(),
        [](const auto& a, const auto& b) { return a.second.lastUse < b.second.lastUse; });
    munmap(oldest->second.base, oldest->second.bytes);
    mapped_.erase(oldest);
  }
}

bool ProcessPeerMemory::read(int peer, uint64_t address, void* to, size_t bytes) {
  auto* out = static_cast<char*>(to);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = readOnce(pids_[peer], address + done, out + done, bytes - done);
    if (got <= 0) {
      // ESRCH: the process is gone. EFAULT (or nothing copied): it lives but no longer has
      // the memory, which only a peer that left the call on a failure does.
      readFailure_ = fmt::format("cannot read {} bytes of rank {}'s memory at {:#x} (pid {}): {}",
                                 bytes - done, peer, address + done, pids_[peer],
                                 got < 0 ? std::strerror(errno) : "nothing was copied");
      return false;
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace grove::transport
