// Entry points of the instruction-set variants of the byte-plane split and merge (private to
// src/codec). The loops are written once (planes_loops.hpp) and compiled once per variant
// under its own `#pragma GCC target`, as the reduction kernels are (exec/reduce_variants.hpp);
// planes.cpp picks one per process.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/isa.hpp"  // GROVE_X86_VARIANTS: whether the x86 variants are compiled
#include "grove/types.hpp"

namespace grove::codec::variants {

using SplitFn = void (*)(DataType type, const void* input, size_t count, uint8_t* const* planes);
using MergeFn = void (*)(DataType type, const uint8_t* const* planes, size_t count, void* output);

void splitPortable(DataType type, const void* input, size_t count, uint8_t* const* planes);
void mergePortable(DataType type, const uint8_t* const* planes, size_t count, void* output);

#if GROVE_X86_VARIANTS
void splitAvx2(DataType type, const void* input, size_t count, uint8_t* const* planes);
void mergeAvx2(DataType type, const uint8_t* const* planes, size_t count, void* output);
void splitAvx512(DataType type, const void* input, size_t count, uint8_t* const* planes);
void mergeAvx512(DataType type, const uint8_t* const* planes, size_t count, void* output);
#endif

}  // namespace grove::codec::variants
