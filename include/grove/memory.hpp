// Memory that the ranks of a host can read from one another: grove's registered buffers.
//
// A collective over ordinary memory moves every byte through a shared-memory FIFO (copied in
// by the sender, out by the receiver) or, for large copies, through the kernel
// (process_vm_readv). Memory from grove::allocate is backed by an anonymous shared-memory
// file instead, which the other processes of a communicator on this host map on first use:
// a large single-host allReduce, reduceScatter, allGather or broadcast whose buffers come
// from here reads every peer's buffer in place, so each input is read once and each output
// written once (see docs/performance.md, "Registered buffers"). nccl-tests' `-R 1` and
// NCCL's ncclMemAlloc play the same part; `grove perf -R 1` uses it.
//
// Any pointer inside an allocation works (sub-buffers too). Nothing about a call changes
// for the caller: buffers from here and ordinary buffers may be mixed freely, on one rank or
// between ranks; each rank only benefits where its own buffers are registered.
#pragma once

#include <cstddef>

namespace grove {

/// Allocates `bytes` (> 0) bytes of zero-filled, page-aligned memory that local peers can map
/// (a memfd mapped shared, pages populated at once). Thread-safe. Throws grove::Error:
/// kInvalidArgument for 0 bytes, kSystemError when the system refuses (the message says why).
void* allocate(size_t bytes);

/// Frees memory from allocate(); nullptr is ignored. Peers that mapped it keep their mapping
/// until they evict it from their cache, so the pages may outlive this call briefly, but the
/// memory is never reused for another allocation while mapped. Throws kInvalidArgument for a
/// pointer that allocate() did not return (or that was freed already).
void deallocate(void* pointer);

/// Whether [pointer, pointer + bytes) lies inside one live allocation of allocate().
bool isRegistered(const void* pointer, size_t bytes);

}  // namespace grove
