// Where a plan's chunks live in memory for one call: the bridge from chunk indices (the
// plan's language) to pointers and lengths (the executor's).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace grove::exec {

/// Elements [offset, offset + length) of a buffer.
struct Extent {
  size_t offset = 0;
  size_t length = 0;
};

/// One buffer of a call: `base` holds blocks of `blockElems` elements, each split into
/// `chunksPerBlock` parts (see plan.hpp), or, when `explicitExtents` is set (allToAllv),
/// chunk c is exactly explicitExtents[c].
struct BufferView {
  char* base = nullptr;
  size_t blockElems = 0;
  uint32_t chunksPerBlock = 1;
  const Extent* explicitExtents = nullptr;

  Extent chunk(uint32_t index) const {
    if (explicitExtents != nullptr) return explicitExtents[index];
    size_t block = index / chunksPerBlock;
    size_t part = index % chunksPerBlock;
    size_t partElems = (blockElems + chunksPerBlock - 1) / chunksPerBlock;
    size_t begin = std::min(part * partElems, blockElems);
    size_t end = std::min(begin + partElems, blockElems);
    return {block * blockElems + begin, end - begin};
  }
};

}  // namespace grove::exec
