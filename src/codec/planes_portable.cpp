// The portable variant of the byte-plane split and merge: the baseline instruction set (SSE2
// on x86-64, NEON on arm64). It runs on every CPU; the other variants give the same bytes.
#include "codec/planes_loops.hpp"
#include "codec/planes_variants.hpp"

namespace grove::codec::variants {

void splitPortable(DataType type, const void* input, size_t count, uint8_t* const* planes) {
  splitLoops(type, input, count, planes);
}

void mergePortable(DataType type, const uint8_t* const* planes, size_t count, void* output) {
  mergeLoops(type, planes, count, output);
}

}  // namespace grove::codec::variants
