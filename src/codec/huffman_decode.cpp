// The decoder of huffman.hpp's coded planes, the part of the codec that reads untrusted bytes.
//
// Four streams are decoded at once: four 64-bit accumulators, each refilled from an unaligned
// 8-byte load (one refill covers five 11-bit codes), and one 2048-entry table, so the inner
// loop has no branch but the loop test. It runs only while every stream has 8 bytes left;
// near the end of a stream a byte-wise refill takes over and every code is checked against
// the bits really there. Nothing is read outside [in, in + available) and nothing written
// outside [out, out + n): the lengths come from the input, so each is checked first.
#include <cstring>
#include <string>

#include "codec/huffman.hpp"

namespace grove::codec::huffman {
namespace {

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

Status fail(const std::string& what) {
  return Status::failure(ErrorCode::kInvalidArgument, "coded plane: " + what);
}

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  uint64_t acc;
  unsigned bits;  // valid bits in acc
};

/// Refills to at least 56 bits; needs p + 8 <= end.
inline void refillFast(Reader& r) {
  r.acc |= load64(r.p) << r.bits;
  r.p += (63 - r.bits) >> 3;
  r.bits |= 56;
}

/// Refills byte by byte, never past end (bits past the stream read as zero).
inline void refillSafe(Reader& r) {
  while (r.bits <= 56 && r.p < r.end) {
    r.acc |= uint64_t{*r.p++} << r.bits;
    r.bits += 8;
  }
}

Status decodeTail(Reader& r, const DecodeTable& table, uint8_t* out, size_t n, int stream) {
  for (size_t i = 0; i < n; ++i) {
    if (r.bits < static_cast<unsigned>(kMaxLength)) refillSafe(r);
    const uint16_t e = table.entry[r.acc & (kTableSize - 1)];
    const unsigned len = e >> 8;
    if (len > r.bits) {
      return fail("stream " + std::to_string(stream) + " ends after " + std::to_string(i) +
                  " of its " + std::to_string(n) + " symbols");
    }
    out[i] = static_cast<uint8_t>(e);
    r.acc >>= len;
    r.bits -= len;
  }
  const size_t left = static_cast<size_t>(r.end - r.p) * 8 + r.bits;
  if (left >= 8) {
    return fail("stream " + std::to_string(stream) + " has " + std::to_string(left / 8) +
                " bytes after its last symbol");
  }
  return {};
}

Status buildTable(const uint8_t lengths[256], DecodeTable& table) {
  uint32_t kraft = 0;
  int present = 0;
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] == 0) continue;
    ++present;
    kraft += uint32_t{1} << (kMaxLength - lengths[s]);
  }
  if (present < 2) return fail(std::to_string(present) + " symbols have codes; expected >= 2");
  if (kraft != kTableSize) {
    return fail("code lengths are not a complete prefix code (Kraft sum " + std::to_string(kraft) +
                "/" + std::to_string(kTableSize) + ")");
  }
  uint16_t codes[256];
  canonicalCodes(lengths, codes);
  for (int s = 0; s < 256; ++s) {
    const unsigned len = lengths[s];
    if (len == 0) continue;
    const auto entry = static_cast<uint16_t>(s | (len << 8));
    for (size_t i = codes[s]; i < kTableSize; i += size_t{1} << len) table.entry[i] = entry;
  }
  return {};
}

}  // namespace

Expected<size_t> decodePlane(const uint8_t* in, size_t available, uint8_t* out, size_t n,
                             DecodeTable& table) {
  if (available < 2) return fail("truncated before its symbol range");
  const int first = in[0];
  const int last = in[1];
  if (first >= last) {
    return fail("symbol range " + std::to_string(first) + ".." + std::to_string(last) +
                " is empty or has one symbol");
  }
  const size_t nibbleBytes = static_cast<size_t>(last - first + 2) / 2;
  const size_t header = 2 + nibbleBytes + 4 * kStreams;
  if (available < header) {
    return fail("header needs " + std::to_string(header) + " bytes, " + std::to_string(available) +
                " left");
  }
  uint8_t lengths[256] = {};
  for (int s = first; s <= last; ++s) {
    const int k = s - first;
    const int len = (in[2 + k / 2] >> (4 * (k % 2))) & 0xf;
    if (len > kMaxLength) {
      return fail("symbol " + std::to_string(s) + " has code length " + std::to_string(len) +
                  " > " + std::to_string(kMaxLength));
    }
    lengths[s] = static_cast<uint8_t>(len);
  }
  if (Status status = buildTable(lengths, table); !status.ok()) return status;

  Reader r[kStreams];
  uint8_t* o[kStreams];
  size_t count[kStreams];
  const uint8_t* p = in + header;
  size_t left = available - header;
  for (int j = 0; j < kStreams; ++j) {
    const size_t bytes = load32(in + header - 4 * kStreams + 4 * j);
    if (bytes > left) {
      return fail("stream " + std::to_string(j) + " of " + std::to_string(bytes) +
                  " bytes runs past the input (" + std::to_string(left) + " left)");
    }
    r[j] = Reader{p, p + bytes, 0, 0};
    o[j] = out + streamStart(n, j);
    count[j] = streamSymbols(n, j);
    p += bytes;
    left -= bytes;
  }

  // Five symbols per stream per refill: 5 * 11 = 55 <= 56 bits.
  size_t done = 0;
  const size_t common = count[kStreams - 1];
  while (done + 5 <= common && r[0].p + 8 <= r[0].end && r[1].p + 8 <= r[1].end &&
         r[2].p + 8 <= r[2].end && r[3].p + 8 <= r[3].end) {
    for (auto& reader : r) refillFast(reader);
    for (size_t k = 0; k < 5; ++k) {
      for (int j = 0; j < kStreams; ++j) {
        const uint16_t e = table.entry[r[j].acc & (kTableSize - 1)];
        o[j][done + k] = static_cast<uint8_t>(e);
        r[j].acc >>= e >> 8;
        r[j].bits -= e >> 8;
      }
    }
    done += 5;
  }
  for (int j = 0; j < kStreams; ++j) {
    if (Status status = decodeTail(r[j], table, o[j] + done, count[j] - done, j); !status.ok()) {
      return status;
    }
  }
  return static_cast<size_t>(p - in);
}

}  // namespace grove::codec::huffman
