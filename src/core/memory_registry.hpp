// The allocations of grove::allocate, looked up by address: what tells a call that one of
// its buffers can be mapped by the local peers (transport::BufferDescriptor).
#pragma once

#include <cstddef>

#include "transport/peer_memory.hpp"

namespace grove::detail {

/// The descriptor of [pointer, pointer + bytes): with its allocation's id, fd, inode and
/// offset when the range lies inside one live allocation, else with region 0 (ordinary
/// memory). A null pointer gives an all-zero descriptor.
transport::BufferDescriptor describeBuffer(const void* pointer, size_t bytes);

}  // namespace grove::detail
