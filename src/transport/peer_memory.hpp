// Reading a local peer's memory in place: what grove's single-host zero-copy collectives
// (exec/one_sided.hpp) are built on.
//
// A rank describes each buffer of a call with a BufferDescriptor and sends it to its peers.
// A peer then reaches the buffer one of two ways:
//  * mapped: the buffer lies in memory from grove::allocate (an anonymous shared-memory file,
//    a memfd); the peer maps that file once (through /proc/<pid>/fd/<fd>, checking the
//    file's inode) and reads it with plain loads from then on, no system call per call;
//  * copied by the kernel: any other buffer is read with process_vm_readv (one copy, the
//    kernel's, instead of two through a FIFO).
// Ranks that are threads of one process share an address space: every buffer is "mapped".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace grove::transport {

/// One buffer of one call on its owner, as sent to the owner's peers (48 bytes).
struct BufferDescriptor {
  uint64_t address = 0;  ///< The buffer's address in the owner's process; 0: no buffer.
  uint64_t bytes = 0;    ///< Its length.
  uint64_t region = 0;   ///< Id of the grove allocation holding it; 0: ordinary memory.
  uint64_t offset = 0;   ///< Offset of `address` from the allocation's start.
  uint64_t inode = 0;    ///< The allocation's memfd inode (tells a reused fd number apart).
  int32_t fd = -1;       ///< The owner's descriptor of that memfd.
  uint32_t reserved = 0;
};
static_assert(sizeof(BufferDescriptor) == 48);

/// A transport's access to the memory of this rank's peers.
class PeerMemory {
 public:
  virtual ~PeerMemory() = default;

  /// Whether this rank can read every peer's memory, mapped or copied (all peers on this
  /// host, in a process this one may read). Decided once, at the first call.
  virtual bool canReadAllPeers() = 0;
  /// Whether map() works for any buffer (threads of one process), not only for grove
  /// allocations.
  virtual bool mapsAnyMemory() const = 0;
  /// A pointer in this process to the buffer `peer` described, or nullptr when it must be
  /// copied with read() (ordinary memory of another process). Mappings are cached per
  /// allocation. Throws kRemoteError / kSystemError naming the peer when a described
  /// allocation cannot be mapped or does not hold the buffer.
  virtual const char* map(int peer, const BufferDescriptor& buffer) = 0;
  /// Copies `bytes` bytes at `address` in `peer`'s process into `to`. Returns false, with
  /// the reason in readFailure(), when the peer's process no longer exists or no longer has
  /// that memory: a peer keeps its buffers until every rank has read them unless it left the
  /// call on a failure, so the caller lets the failure machinery name the failure, as for
  /// any dead peer, and reports readFailure() only if none comes.
  virtual bool read(int peer, uint64_t address, void* to, size_t bytes) = 0;
  /// Why the last read() returned false.
  virtual const std::string& readFailure() const = 0;
};

}  // namespace grove::transport
