// The static Huffman coder of huffman.hpp, encoding side: counting, length-limited code
// construction, canonical codes and the encoder of the four-stream layout (the decoder is
// huffman_decode.cpp).
//
// Speed is what shapes it (the codec must code a bfloat16 exponent plane at well over
// 1 GB/s of input): the encoder knows every stream's size from the counts, writes the
// streams two at a time straight to their places, looks up two symbols at once where a
// plane has few symbols (a table of the block's pairs of symbols), and adds four or five
// codes to a 64-bit accumulator between whole-word stores.
#include "codec/huffman.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace grove::codec::huffman {
namespace {

void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

void store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

/// Moffat and Katajainen's in-place minimum-redundancy code: `a` holds n >= 2 counts in
/// ascending order and receives their code lengths (unlimited).
void minimumRedundancy(uint32_t* a, int n) {
  a[0] += a[1];
  int root = 0;
  int leaf = 2;
  for (int next = 1; next < n - 1; ++next) {
    if (leaf >= n || a[root] < a[leaf]) {
      a[next] = a[root];
      a[root++] = static_cast<uint32_t>(next);
    } else {
      a[next] = a[leaf++];
    }
    if (leaf >= n || (root < next && a[root] < a[leaf])) {
      a[next] += a[root];
      a[root++] = static_cast<uint32_t>(next);
    } else {
      a[next] += a[leaf++];
    }
  }
  a[n - 2] = 0;
  for (int next = n - 3; next >= 0; --next) a[next] = a[a[next]] + 1;
  int avail = 1;
  int used = 0;
  uint32_t depth = 0;
  root = n - 2;
  int next = n - 1;
  while (avail > 0) {
    while (root >= 0 && a[root] == depth) {
      ++used;
      --root;
    }
    while (avail > used) {
      a[next--] = depth;
      --avail;
    }
    avail = 2 * used;
    ++depth;
    used = 0;
  }
}

size_t headerBytes(const uint8_t lengths[256], int* first, int* last) {
  int lo = 0;
  while (lo < 256 && lengths[lo] == 0) ++lo;
  int hi = 255;
  while (hi > lo && lengths[hi] == 0) --hi;
  *first = lo;
  *last = hi;
  return 2 + static_cast<size_t>(hi - lo + 2) / 2 + 4 * kStreams;
}

/// One stream being written: its accumulator and where its bytes go. `end` is where the
/// next stream starts (for the last, the end of the plane plus kWriteSlack): a whole-word
/// store is used only while it stays below `end`, so streams can be written interleaved.
struct Writer {
  uint8_t* p;
  uint8_t* end;
  uint64_t acc;
  unsigned bits;  // pending bits in acc, < 8 after a flush
};

/// A code as the encoder wants it: bits (reversed canonical code) and length apart, so that
/// each is one plain load rather than a load and a mask or shift.
struct Code {
  const uint16_t* bits;
  const uint8_t* length;
  const uint32_t* pairs;  // PairTable::entry
};

/// Two symbols at once, through the pair table: p[0] and p[1] as one little-endian index.
inline void putPair(Writer& w, Code code, const uint8_t* p) {
  uint16_t index;
  std::memcpy(&index, p, 2);
  const uint32_t entry = code.pairs[index];
  w.acc |= uint64_t{entry & 0xffffffu} << w.bits;
  w.bits += entry >> 24;
}

inline void put(Writer& w, Code code, uint8_t symbol) {
  w.acc |= uint64_t{code.bits[symbol]} << w.bits;
  w.bits += code.length[symbol];
}

inline void flush(Writer& w) {
  if (w.p + 8 <= w.end) {
    store64(w.p, w.acc);
    w.p += w.bits >> 3;
    w.acc >>= w.bits & ~7u;
    w.bits &= 7u;
    return;
  }
  for (; w.bits >= 8; w.bits -= 8) {
    *w.p++ = static_cast<uint8_t>(w.acc);
    w.acc >>= 8;
  }
}

/// Writes two streams at once. Two, not four: the writers are copied into locals that the
/// compiler keeps in registers, and four would not fit (they spilled to the stack and the
/// loop ran at memory speed).
template <bool kPairs>
void encodePair(Writer& first, const uint8_t* a, size_t na, Writer& second, const uint8_t* b,
                size_t nb, Code code) {
  Writer x = first;
  Writer y = second;
  size_t common;
  if constexpr (kPairs) {
    // Two pairs of codes of at most 11 bits on top of at most 7 pending bits fit in 51 bits.
    common = std::min(na, nb) / 4 * 4;
    for (size_t i = 0; i < common; i += 4) {
      putPair(x, code, a + i);
      putPair(y, code, b + i);
      putPair(x, code, a + i + 2);
      putPair(y, code, b + i + 2);
      flush(x);
      flush(y);
    }
  } else {
    // Five codes of at most 11 bits on top of at most 7 pending bits fit in 62 bits.
    common = std::min(na, nb) / 5 * 5;
    for (size_t i = 0; i < common; i += 5) {
      for (size_t k = 0; k < 5; ++k) {
        put(x, code, a[i + k]);
        put(y, code, b[i + k]);
      }
      flush(x);
      flush(y);
    }
  }
  for (size_t i = common; i < na; ++i) {
    put(x, code, a[i]);
    flush(x);
  }
  for (size_t i = common; i < nb; ++i) {
    put(y, code, b[i]);
    flush(y);
  }
  if (x.bits > 0) *x.p++ = static_cast<uint8_t>(x.acc);
  if (y.bits > 0) *y.p++ = static_cast<uint8_t>(y.acc);
  first = x;
  second = y;
}

}  // namespace

void canonicalCodes(const uint8_t lengths[256], uint16_t codes[256]) {
  int perLength[kMaxLength + 1] = {};
  for (int s = 0; s < 256; ++s) ++perLength[lengths[s]];
  perLength[0] = 0;
  uint32_t next[kMaxLength + 2] = {};
  uint32_t code = 0;
  for (int len = 1; len <= kMaxLength; ++len) {
    code = (code + static_cast<uint32_t>(perLength[len - 1])) << 1;
    next[len] = code;
  }
  for (int s = 0; s < 256; ++s) {
    const int len = lengths[s];
    if (len == 0) continue;
    const uint32_t c = next[len]++;
    uint32_t reversed = 0;
    for (int b = 0; b < len; ++b) reversed |= ((c >> b) & 1u) << (len - 1 - b);
    codes[s] = static_cast<uint16_t>(reversed);
  }
}

std::array<uint32_t, 256> Counts::total() const {
  std::array<uint32_t, 256> sum{};
  for (const auto& s : stream) {
    for (int i = 0; i < 256; ++i) sum[i] += s[i];
  }
  return sum;
}

void countSymbols(const uint8_t* plane, size_t n, Counts& counts) {
  std::memset(counts.stream, 0, sizeof(counts.stream));
  const uint8_t* base[kStreams];
  size_t len[kStreams];
  for (int j = 0; j < kStreams; ++j) {
    base[j] = plane + streamStart(n, j);
    len[j] = streamSymbols(n, j);
  }
  // The four streams at once: four tables, so no two increments in flight hit one counter
  // unless a stream repeats itself.
  const size_t common = len[kStreams - 1];
  for (size_t i = 0; i < common; ++i) {
    ++counts.stream[0][base[0][i]];
    ++counts.stream[1][base[1][i]];
    ++counts.stream[2][base[2][i]];
    ++counts.stream[3][base[3][i]];
  }
  for (int j = 0; j < kStreams; ++j) {
    for (size_t i = common; i < len[j]; ++i) ++counts.stream[j][base[j][i]];
  }
}

std::array<uint32_t, 256> sampleSymbols(const uint8_t* plane, size_t n, size_t stride) {
  std::array<uint32_t, 256> counts{};
  for (size_t i = 0; i < n; i += stride) ++counts[plane[i]];
  return counts;
}

int buildLengths(const std::array<uint32_t, 256>& counts, uint8_t lengths[256]) {
  std::memset(lengths, 0, 256);
  // Symbols by ascending count (ties by symbol), as one integer key each: sorting plain
  // integers is several times faster than sorting through a comparator on the counts.
  std::array<uint64_t, 256> keys;
  int n = 0;
  for (int s = 0; s < 256; ++s) {
    if (counts[s] > 0) keys[n++] = uint64_t{counts[s]} << 8 | static_cast<uint64_t>(s);
  }
  if (n < 2) return n;
  std::sort(keys.begin(), keys.begin() + n);
  std::array<uint8_t, 256> order;
  std::array<uint32_t, 256> a;
  for (int i = 0; i < n; ++i) {
    order[i] = static_cast<uint8_t>(keys[i]);
    a[i] = static_cast<uint32_t>(keys[i] >> 8);
  }
  minimumRedundancy(a.data(), n);  // a[i]: length of order[i], non-increasing in i

  // Limit the lengths to kMaxLength (zlib's and miniz's way): clamp, then, while the code is
  // over-full, lengthen one code of the longest length below the limit.
  int perLength[33] = {};
  for (int i = 0; i < n; ++i) ++perLength[std::min<uint32_t>(a[i], 32)];
  for (int len = kMaxLength + 1; len <= 32; ++len) {
    perLength[kMaxLength] += perLength[len];
    perLength[len] = 0;
  }
  uint32_t kraft = 0;
  for (int len = 1; len <= kMaxLength; ++len) {
    kraft += static_cast<uint32_t>(perLength[len]) << (kMaxLength - len);
  }
  while (kraft > kTableSize) {
    --perLength[kMaxLength];
    for (int len = kMaxLength - 1; len > 0; --len) {
      if (perLength[len] != 0) {
        --perLength[len];
        perLength[len + 1] += 2;
        break;
      }
    }
    --kraft;
  }
  // The most frequent symbols (the end of `order`) take the shortest codes.
  int i = n - 1;
  for (int len = 1; len <= kMaxLength; ++len) {
    for (int k = 0; k < perLength[len]; ++k) lengths[order[i--]] = static_cast<uint8_t>(len);
  }
  return n;
}

uint64_t codedBits(const std::array<uint32_t, 256>& counts, const uint8_t lengths[256]) {
  uint64_t bits = 0;
  for (int s = 0; s < 256; ++s) bits += uint64_t{counts[s]} * lengths[s];
  return bits;
}

size_t codedBytes(const Counts& counts, const uint8_t lengths[256]) {
  int first, last;
  size_t bytes = headerBytes(lengths, &first, &last);
  for (const auto& s : counts.stream) {
    uint64_t bits = 0;
    for (int i = 0; i < 256; ++i) bits += uint64_t{s[i]} * lengths[i];
    bytes += static_cast<size_t>((bits + 7) / 8);
  }
  return bytes;
}

size_t encodePlane(const uint8_t* plane, size_t n, const Counts& counts, const uint8_t lengths[256],
                   PairTable& pairs, uint8_t* out) {
  int first, last;
  const size_t header = headerBytes(lengths, &first, &last);
  out[0] = static_cast<uint8_t>(first);
  out[1] = static_cast<uint8_t>(last);
  uint8_t* nibbles = out + 2;
  std::memset(nibbles, 0, static_cast<size_t>(last - first + 2) / 2);
  for (int s = first; s <= last; ++s) {
    const int k = s - first;
    nibbles[k / 2] |= static_cast<uint8_t>(lengths[s] << (4 * (k % 2)));
  }
  uint16_t codes[256] = {};
  canonicalCodes(lengths, codes);
  // The pairs of occupied symbols only: every pair the plane can hold. Worth it when there
  // are few (an exponent plane's few dozen symbols give a few thousand pairs); a plane of
  // many symbols is coded one symbol at a time instead.
  int occupied = 0;
  for (int s = first; s <= last; ++s) occupied += lengths[s] != 0;
  const bool usePairs = static_cast<size_t>(occupied) * static_cast<size_t>(occupied) <= n / 8;
  if (usePairs) {
    for (int a = first; a <= last; ++a) {
      if (lengths[a] == 0) continue;
      for (int b = first; b <= last; ++b) {
        if (lengths[b] == 0) continue;
        pairs.entry[a | b << 8] =
            (codes[a] | uint32_t{codes[b]} << lengths[a]) | uint32_t(lengths[a] + lengths[b]) << 24;
      }
    }
  }
  const Code code{codes, lengths, pairs.entry};

  // Every stream's size follows from its counts, so each is written straight to its final
  // place, two at a time: two independent accumulators keep the core busy.
  uint8_t* sizes = out + header - 4 * kStreams;
  uint8_t* p = out + header;
  Writer w[kStreams];
  const uint8_t* in[kStreams];
  size_t count[kStreams];
  for (int j = 0; j < kStreams; ++j) {
    uint64_t bits = 0;
    for (int s = 0; s < 256; ++s) bits += uint64_t{counts.stream[j][s]} * lengths[s];
    const auto bytes = static_cast<size_t>((bits + 7) / 8);
    store32(sizes + 4 * j, static_cast<uint32_t>(bytes));
    w[j] = Writer{p, p + bytes, 0, 0};
    in[j] = plane + streamStart(n, j);
    count[j] = streamSymbols(n, j);
    p += bytes;
  }
  w[kStreams - 1].end += kWriteSlack;
  if (usePairs) {
    encodePair<true>(w[0], in[0], count[0], w[1], in[1], count[1], code);
    encodePair<true>(w[2], in[2], count[2], w[3], in[3], count[3], code);
  } else {
    encodePair<false>(w[0], in[0], count[0], w[1], in[1], count[1], code);
    encodePair<false>(w[2], in[2], count[2], w[3], in[3], count[3], code);
  }
  return static_cast<size_t>(p - out);
}

}  // namespace grove::codec::huffman
