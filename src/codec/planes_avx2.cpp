// The avx2 variant of the byte-plane split and merge (x86-64-v3: AVX2, 32-byte vectors). Only this
// file is compiled for x86-64-v3; planes.cpp calls it after checking the CPU.
#include <cstring>

#include "codec/planes_variants.hpp"

#if GROVE_X86_VARIANTS
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")

#include "codec/planes_loops.hpp"

namespace grove::codec::variants {

void splitAvx2(DataType type, const void* input, size_t count, uint8_t* const* planes) {
  splitLoops(type, input, count, planes);
}

void mergeAvx2(DataType type, const uint8_t* const* planes, size_t count, void* output) {
  mergeLoops(type, planes, count, output);
}

}  // namespace grove::codec::variants

#pragma GCC pop_options
#endif  // GROVE_X86_VARIANTS
