// The byte-plane loops, written once and compiled once per instruction set
// (planes_portable.cpp, planes_avx2.cpp, planes_avx512.cpp).
//
// Why plain loops over fixed chunks: the work is shifts, masks and byte (de)interleaving,
// which GCC vectorises well, but at -O2 only loops whose trip count is known (no tail to
// peel) and whose pointers cannot alias; so each loop runs over chunks of kChunk elements
// through __restrict pointers, and the last partial chunk runs the same loop with a runtime
// count. Values are read and written with memcpy, so the buffers need no alignment.
//
// How to include it: after `#pragma GCC target` (or none, for the portable variant). All of
// it has internal linkage, so each variant keeps private copies that the linker cannot fold
// into another variant's code path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "grove/types.hpp"

namespace grove::codec::variants {
namespace {

constexpr size_t kChunk = 256;

inline void splitBf16Run(const uint8_t* __restrict in, uint8_t* __restrict e, uint8_t* __restrict m,
                         size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, in + 2 * i, 2);
    e[i] = static_cast<uint8_t>(v >> 7);
    m[i] = static_cast<uint8_t>(((v >> 8) & 0x80) | (v & 0x7f));
  }
}

inline void mergeBf16Run(const uint8_t* __restrict e, const uint8_t* __restrict m,
                         uint8_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t v = static_cast<uint16_t>((e[i] << 7) | ((m[i] & 0x80) << 8) | (m[i] & 0x7f));
    std::memcpy(out + 2 * i, &v, 2);
  }
}

inline void splitFp16Run(const uint8_t* __restrict in, uint8_t* __restrict hi,
                         uint8_t* __restrict lo, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, in + 2 * i, 2);
    hi[i] = static_cast<uint8_t>(v >> 8);
    lo[i] = static_cast<uint8_t>(v);
  }
}

inline void mergeFp16Run(const uint8_t* __restrict hi, const uint8_t* __restrict lo,
                         uint8_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t v = static_cast<uint16_t>((hi[i] << 8) | lo[i]);
    std::memcpy(out + 2 * i, &v, 2);
  }
}

inline void splitFp32Run(const uint8_t* __restrict in, uint8_t* __restrict p0,
                         uint8_t* __restrict p1, uint8_t* __restrict p2, uint8_t* __restrict p3,
                         size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, in + 4 * i, 4);
    p0[i] = static_cast<uint8_t>(v >> 23);
    p1[i] = static_cast<uint8_t>(((v >> 24) & 0x80) | ((v >> 16) & 0x7f));
    p2[i] = static_cast<uint8_t>(v >> 8);
    p3[i] = static_cast<uint8_t>(v);
  }
}

inline void mergeFp32Run(const uint8_t* __restrict p0, const uint8_t* __restrict p1,
                         const uint8_t* __restrict p2, const uint8_t* __restrict p3,
                         uint8_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = p1[i] & 0x80u;
    const uint32_t v = (s << 24) | (uint32_t{p0[i]} << 23) | ((p1[i] & 0x7fu) << 16) |
                       (uint32_t{p2[i]} << 8) | p3[i];
    std::memcpy(out + 4 * i, &v, 4);
  }
}

inline void splitLoops(DataType type, const void* input, size_t count, uint8_t* const* planes) {
  const auto* in = static_cast<const uint8_t*>(input);
  const size_t size = dataTypeSize(type);
  for (size_t i = 0; i < count; i += kChunk) {
    const size_t n = count - i < kChunk ? count - i : kChunk;
    const uint8_t* src = in + i * size;
    if (type == DataType::kBFloat16) {
      if (n == kChunk) {
        splitBf16Run(src, planes[0] + i, planes[1] + i, kChunk);
      } else {
        splitBf16Run(src, planes[0] + i, planes[1] + i, n);
      }
    } else if (type == DataType::kFloat16) {
      if (n == kChunk) {
        splitFp16Run(src, planes[0] + i, planes[1] + i, kChunk);
      } else {
        splitFp16Run(src, planes[0] + i, planes[1] + i, n);
      }
    } else if (n == kChunk) {
      splitFp32Run(src, planes[0] + i, planes[1] + i, planes[2] + i, planes[3] + i, kChunk);
    } else {
      splitFp32Run(src, planes[0] + i, planes[1] + i, planes[2] + i, planes[3] + i, n);
    }
  }
}

inline void mergeLoops(DataType type, const uint8_t* const* planes, size_t count, void* output) {
  auto* out = static_cast<uint8_t*>(output);
  const size_t size = dataTypeSize(type);
  for (size_t i = 0; i < count; i += kChunk) {
    const size_t n = count - i < kChunk ? count - i : kChunk;
    uint8_t* dst = out + i * size;
    if (type == DataType::kBFloat16) {
      if (n == kChunk) {
        mergeBf16Run(planes[0] + i, planes[1] + i, dst, kChunk);
      } else {
        mergeBf16Run(planes[0] + i, planes[1] + i, dst, n);
      }
    } else if (type == DataType::kFloat16) {
      if (n == kChunk) {
        mergeFp16Run(planes[0] + i, planes[1] + i, dst, kChunk);
      } else {
        mergeFp16Run(planes[0] + i, planes[1] + i, dst, n);
      }
    } else if (n == kChunk) {
      mergeFp32Run(planes[0] + i, planes[1] + i, planes[2] + i, planes[3] + i, dst, kChunk);
    } else {
      mergeFp32Run(planes[0] + i, planes[1] + i, planes[2] + i, planes[3] + i, dst, n);
    }
  }
}

}  // namespace
}  // namespace grove::codec::variants
