// The codec's entropy coder: a static Huffman code over the bytes of one plane of one block,
// its code lengths stored in front of the coded plane (docs/compression.md explains why this
// won against zstd and lz4 on the exponent planes).
//
// A coded plane is
//
//   u8  first, last          the symbol range with non-zero code lengths (first < last)
//   u8  lengths[(last - first + 2) / 2]   4-bit code lengths of symbols first..last, low
//                            nibble first; 0 = the symbol does not occur; at most kMaxLength
//   u32 streamBytes[4]       little-endian lengths of the four streams that follow
//   the four streams         stream j codes the symbols [j·q, min(n, (j+1)·q)), q = ⌈n/4⌉
//
// Codes are canonical (by length, then symbol value), so the lengths alone define them, and
// they must form a complete prefix code. Each stream is a bit string read from the least
// significant bit of its first byte, padded with zero bits to a whole byte. Four independent
// streams let the decoder run four lookups at a time; kMaxLength = 11 keeps its table (2048
// two-byte entries) in L1.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/status.hpp"

namespace grove::codec::huffman {

inline constexpr int kMaxLength = 11;
inline constexpr int kStreams = 4;
inline constexpr size_t kTableSize = size_t{1} << kMaxLength;
/// Bytes an encoder may write past the end of what it reports (whole-word stores).
inline constexpr size_t kWriteSlack = 8;

/// Number of the `n` symbols of a plane that stream `j` codes, and where they start.
constexpr size_t streamSymbols(size_t n, int j) {
  const size_t q = (n + kStreams - 1) / kStreams;
  const size_t start = q * static_cast<size_t>(j);
  return start >= n ? 0 : (n - start < q ? n - start : q);
}
constexpr size_t streamStart(size_t n, int j) {
  const size_t q = (n + kStreams - 1) / kStreams;
  const size_t start = q * static_cast<size_t>(j);
  return start >= n ? n : start;
}

/// Symbol counts of a plane, kept per stream so that each stream's coded size is known
/// before it is written (the streams are then written in place, back to back).
struct Counts {
  uint32_t stream[kStreams][256];
  /// Counts of all streams together.
  std::array<uint32_t, 256> total() const;
};

/// Counts the `n` bytes at `plane` into `counts`.
void countSymbols(const uint8_t* plane, size_t n, Counts& counts);

/// Counts every `stride`-th byte of `plane` (a cheap estimate of whether coding pays).
std::array<uint32_t, 256> sampleSymbols(const uint8_t* plane, size_t n, size_t stride);

/// Code lengths (0 for absent symbols, at most kMaxLength) of a Huffman code for `counts`;
/// a complete prefix code. Returns the number of symbols present; with fewer than two no
/// code is built and every length is 0.
int buildLengths(const std::array<uint32_t, 256>& counts, uint8_t lengths[256]);

/// The canonical codes of `lengths` (by length, then symbol value), bit-reversed for
/// least-significant-bit-first streams; entries of absent symbols are left as they are.
void canonicalCodes(const uint8_t lengths[256], uint16_t codes[256]);

/// Bytes of the coded plane (header and streams) for `counts` and `lengths`.
size_t codedBytes(const Counts& counts, const uint8_t lengths[256]);

/// Bits of the `counts` coded with `lengths`, without header or padding.
uint64_t codedBits(const std::array<uint32_t, 256>& counts, const uint8_t lengths[256]);

/// The encoder's table of two-symbol codes, indexed by two plane bytes read as one
/// little-endian 16-bit value: combined code bits | combined length << 24. encodePlane fills
/// the entries of the symbols present and reads only those (256 KiB, so it lives in the
/// codec's workspace, not on the stack).
struct PairTable {
  uint32_t entry[1 << 16];
};

/// Writes the coded plane of the `n` bytes at `plane`, whose counts and lengths are given,
/// to `out`, which has room for codedBytes(counts, lengths) + kWriteSlack bytes. Returns
/// codedBytes(counts, lengths).
size_t encodePlane(const uint8_t* plane, size_t n, const Counts& counts, const uint8_t lengths[256],
                   PairTable& pairs, uint8_t* out);

/// A decoding table, rebuilt from each coded plane's lengths.
struct DecodeTable {
  uint16_t entry[kTableSize];  // symbol | length << 8
};

/// Decodes a coded plane of `n` symbols from the `available` bytes at `in` into out[0..n).
/// Returns the bytes the coded plane took, or kInvalidArgument naming what is wrong (bad
/// lengths, stream lengths past the input, a stream that runs out or has bytes left). Reads
/// only in[0..available) and writes only out[0..n).
Expected<size_t> decodePlane(const uint8_t* in, size_t available, uint8_t* out, size_t n,
                             DecodeTable& table);

}  // namespace grove::codec::huffman
