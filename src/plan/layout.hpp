// Where a plan's chunks live in memory for one call: the bridge from chunk indices (the
// plan's language) to pointers and lengths (the executor's). It belongs to the plan: the
// executor and the simulator (model/) both lay chunks out this way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/enforce.hpp"

namespace grove::plan {

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
    GROVE_ENFORCE_GT(chunksPerBlock, 0u, "a buffer view without chunks");
    size_t block = index / chunksPerBlock;
    size_t part = index % chunksPerBlock;
    size_t partElems = (blockElems + chunksPerBlock - 1) / chunksPerBlock;
    size_t begin = std::min(part * partElems, blockElems);
    size_t end = std::min(begin + partElems, blockElems);
    return {block * blockElems + begin, end - begin};
  }
};

}  // namespace grove::plan

// The executor's names for them (exec/executor.hpp and model/simulator.cpp spell them so).
namespace grove::exec {
using plan::BufferView;
using plan::Extent;
}  // namespace grove::exec
