// The lossless codec of src/codec: round trips of every DataType over several block sizes
// and counts (0, 1, block edges, non-multiples), special values bit for bit (NaN payloads,
// ±inf, subnormals, −0, every 16-bit pattern), the exact sizes of raw, constant and empty
// frames, the plane variants against each other, the Huffman code's length limit, block-by-
// block decoding, and corrupt frames (truncation at every byte, every byte flipped, length
// fields, type and count) failing with a message, never crashing.
#include "codec/codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/huffman.hpp"
#include "codec/planes.hpp"
#include "exec/half.hpp"
#include "gmock/gmock.h"
#include "grove/types.hpp"

namespace grove::codec {
namespace {

using Bytes = std::vector<uint8_t>;
using ::testing::HasSubstr;

constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,   DataType::kUint64,
                                  DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                  DataType::kBFloat16};
constexpr DataType kPlaneTypes[] = {DataType::kFloat16, DataType::kFloat32, DataType::kBFloat16};

/// `count` values of `type` like a trained tensor's: normal(0, 0.02) in the type's format
/// (integers: the same values scaled), so the exponent planes are worth coding.
Bytes gaussian(DataType type, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const size_t size = dataTypeSize(type);
  Bytes out(count * size);
  for (size_t i = 0; i < count; ++i) {
    const float v = normal(rng);
    uint8_t* p = out.data() + i * size;
    if (type == DataType::kFloat32) {
      const uint32_t bits = exec::half_detail::floatBits(v);
      std::memcpy(p, &bits, 4);
    } else if (type == DataType::kBFloat16) {
      const uint16_t bits = exec::floatToBfloat16(v);
      std::memcpy(p, &bits, 2);
    } else if (type == DataType::kFloat16) {
      const uint16_t bits = exec::floatToHalf(v);
      std::memcpy(p, &bits, 2);
    } else if (type == DataType::kFloat64) {
      const double d = v;
      std::memcpy(p, &d, 8);
    } else {
      const auto x = static_cast<int64_t>(std::lround(v * 3000));
      std::memcpy(p, &x, size);
    }
  }
  return out;
}

Bytes randomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

Bytes encoded(const Bytes& data, DataType type, size_t blockBytes = kDefaultBlockBytes) {
  const size_t count = data.size() / dataTypeSize(type);
  Bytes frame(maxEncodedBytes(count, type, blockBytes));
  Workspace ws;
  auto size = encode(data.data(), count, type, frame.data(), frame.size(), ws, blockBytes);
  EXPECT_TRUE(size.ok()) << size.message();
  frame.resize(size.ok() ? *size : 0);
  return frame;
}

Status decodeInto(const Bytes& frame, size_t size, Bytes& out, DataType type) {
  Workspace ws;
  return decode(frame.data(), size, out.data(), out.size() / dataTypeSize(type), type, ws);
}

void expectRoundTrip(const Bytes& data, DataType type, size_t blockBytes) {
  const size_t count = data.size() / dataTypeSize(type);
  const Bytes frame = encoded(data, type, blockBytes);
  EXPECT_LE(frame.size(), maxEncodedBytes(count, type, blockBytes));
  Bytes back(data.size(), 0xa5);
  const Status status = decodeInto(frame, frame.size(), back, type);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(back, data) << toString(type) << " count " << count << " block " << blockBytes;
}

TEST(CodecRoundTrip, EveryTypeBlockSizeAndCount) {
  for (DataType type : kAllTypes) {
    const size_t size = dataTypeSize(type);
    for (size_t blockBytes :
         {size_t{1}, size_t{64}, size_t{1000}, size_t{4096}, kDefaultBlockBytes}) {
      const size_t b = blockElements(type, blockBytes);
      for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, b - 1, b, b + 1, 3 * b + 5,
                           size_t{70000}}) {
        if (count * size > (1u << 20)) continue;
        expectRoundTrip(gaussian(type, count, count + 17), type, blockBytes);
        expectRoundTrip(randomBytes(count * size, count + 5), type, blockBytes);
      }
    }
  }
}

TEST(CodecRoundTrip, GaussianPlanesShrink) {
  // Exponent planes of near-Gaussian data are coded, so every plane type shrinks.
  for (DataType type : kPlaneTypes) {
    const Bytes data = gaussian(type, 100000, 3);
    const Bytes frame = encoded(data, type);
    EXPECT_LT(frame.size() * 10, data.size() * 9) << toString(type);
    expectRoundTrip(data, type, kDefaultBlockBytes);
  }
}

TEST(CodecRoundTrip, OneWorkspaceForManyCalls) {
  Workspace ws(kDefaultBlockBytes);
  for (DataType type : kAllTypes) {
    for (size_t count : {size_t{5000}, size_t{1}, size_t{123457}}) {
      const Bytes data = gaussian(type, count, 11);
      Bytes frame(maxEncodedBytes(count, type));
      auto size = encode(data.data(), count, type, frame.data(), frame.size(), ws);
      ASSERT_TRUE(size.ok()) << size.message();
      Bytes back(data.size());
      ASSERT_TRUE(decode(frame.data(), *size, back.data(), count, type, ws).ok());
      EXPECT_EQ(back, data);
    }
  }
}

/// `specials` repeated through a Gaussian block, so that the block is coded, not raw.
template <class T>
void expectSpecialsPreserved(DataType type, const std::vector<T>& specials) {
  Bytes data = gaussian(type, 20000, 9);
  for (size_t i = 0; i < 20000; i += 7) {
    std::memcpy(data.data() + i * sizeof(T), &specials[(i / 7) % specials.size()], sizeof(T));
  }
  const Bytes frame = encoded(data, type);
  EXPECT_LT(frame.size(), data.size()) << toString(type) << ": the block was stored raw";
  Bytes back(data.size());
  ASSERT_TRUE(decodeInto(frame, frame.size(), back, type).ok());
  EXPECT_EQ(back, data) << toString(type);
}

TEST(CodecSpecials, NanPayloadsInfinitiesSubnormalsAndNegativeZero) {
  expectSpecialsPreserved<uint32_t>(
      DataType::kFloat32,
      {0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7fbfffffu, 0xffffffffu, 0x7f800000u, 0xff800000u,
       0x00000001u, 0x807fffffu, 0x80000000u, 0x00000000u, 0x00400000u});
  expectSpecialsPreserved<uint16_t>(
      DataType::kBFloat16, {0x7fc0, 0x7f81, 0xff81, 0x7fff, 0xffff, 0x7f80, 0xff80, 0x0001, 0x807f,
                            0x8000, 0x0000, 0x0040});
  expectSpecialsPreserved<uint16_t>(
      DataType::kFloat16, {0x7e00, 0x7c01, 0xfc01, 0x7fff, 0xffff, 0x7c00, 0xfc00, 0x0001, 0x83ff,
                           0x8000, 0x0000, 0x0200});
}

TEST(CodecSpecials, EverySixteenBitPattern) {
  Bytes data(65536 * 2);
  for (uint32_t v = 0; v < 65536; ++v) {
    const auto bits = static_cast<uint16_t>(v);
    std::memcpy(data.data() + 2 * v, &bits, 2);
  }
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) {
    expectRoundTrip(data, type, kDefaultBlockBytes);
    expectRoundTrip(data, type, 512);
  }
}

TEST(CodecSizes, RandomBitsAreStoredRawAtOneBytePerBlock) {
  for (DataType type : kPlaneTypes) {
    const size_t count = 300000;
    const Bytes data = randomBytes(count * dataTypeSize(type), 42);
    const Bytes frame = encoded(data, type);
    const size_t blocks = (count - 1) / blockElements(type, kDefaultBlockBytes) + 1;
    EXPECT_EQ(frame.size(), kFrameHeaderBytes + blocks + data.size()) << toString(type);
    EXPECT_LE(frame.size(), maxEncodedBytes(count, type));
  }
}

TEST(CodecSizes, PassThroughTypesAreRaw) {
  const Bytes data = gaussian(DataType::kInt32, 50000, 1);
  const Bytes frame = encoded(data, DataType::kInt32, 4096);
  EXPECT_EQ(frame.size(), kFrameHeaderBytes + (50000 + 1023) / 1024 + data.size());
}

TEST(CodecSizes, ConstantBlocksTakeNineBytes) {
  // flag, u32 payload, and per plane a mode byte and the value.
  const Bytes zeros(40000 * 2, 0);
  EXPECT_EQ(encoded(zeros, DataType::kBFloat16).size(), kFrameHeaderBytes + 2 * (1 + 4 + 2 * 2));
  EXPECT_EQ(encoded(Bytes(10000 * 4, 0x3f), DataType::kFloat32).size(),
            kFrameHeaderBytes + 1 + 4 + 4 * 2);
}

TEST(CodecSizes, MaxEncodedBytes) {
  EXPECT_EQ(maxEncodedBytes(0, DataType::kFloat32), kFrameHeaderBytes + 8);
  EXPECT_EQ(maxEncodedBytes(16384, DataType::kFloat32), kFrameHeaderBytes + 1 + 65536 + 8);
  EXPECT_EQ(maxEncodedBytes(16385, DataType::kFloat32), kFrameHeaderBytes + 2 + 65540 + 8);
  EXPECT_EQ(maxEncodedBytes(SIZE_MAX / 2, DataType::kFloat64), SIZE_MAX);
}

TEST(CodecFrame, HeaderLayout) {
  const Bytes data = gaussian(DataType::kBFloat16, 3, 1);
  const Bytes frame = encoded(data, DataType::kBFloat16, 4);
  const Bytes header(frame.begin(), frame.begin() + kFrameHeaderBytes);
  EXPECT_EQ(header, (Bytes{'G', 'R', 'V', 'Z', 1, 9, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0}));
  // Two raw blocks (2 and 1 elements): too small to code.
  EXPECT_EQ(frame.size(), kFrameHeaderBytes + 1 + 4 + 1 + 2);
  auto parsed = readHeader(frame.data(), frame.size());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->type, DataType::kBFloat16);
  EXPECT_EQ(parsed->count, 3u);
  EXPECT_EQ(parsed->blockElements, 2u);
  EXPECT_EQ(parsed->blocks(), 2u);
}

TEST(CodecFrame, DecodesBlockByBlockAsItArrives) {
  const DataType type = DataType::kFloat32;
  const Bytes data = gaussian(type, 10000, 5);
  const Bytes frame = encoded(data, type, 4096);
  auto header = readHeader(frame.data(), kFrameHeaderBytes);
  ASSERT_TRUE(header.ok());
  Bytes back(data.size());
  Workspace ws;
  size_t pos = kFrameHeaderBytes;
  for (uint64_t b = 0; b < header->blocks(); ++b) {
    // Only what has arrived so far is visible: fewer bytes than the block fail, all of it
    // decodes.
    auto size = decodeBlock(*header, b, frame.data() + pos, frame.size() - pos, back.data(), ws);
    ASSERT_TRUE(size.ok()) << size.message();
    EXPECT_FALSE(decodeBlock(*header, b, frame.data() + pos, *size - 1, back.data(), ws).ok());
    pos += *size;
  }
  EXPECT_EQ(pos, frame.size());
  EXPECT_EQ(back, data);
  EXPECT_FALSE(decodeBlock(*header, header->blocks(), frame.data(), 0, back.data(), ws).ok());
}

TEST(CodecArguments, EncodeRefusesBadArguments) {
  Workspace ws;
  Bytes data(400), frame(maxEncodedBytes(100, DataType::kFloat32));
  auto small = encode(data.data(), 100, DataType::kFloat32, frame.data(), frame.size() - 1, ws);
  EXPECT_THAT(small.message(), HasSubstr("below maxEncodedBytes"));
  auto block = encode(data.data(), 100, DataType::kFloat32, frame.data(), frame.size(), ws, 0);
  EXPECT_THAT(block.message(), HasSubstr("block size 0"));
  auto type = encode(data.data(), 100, static_cast<DataType>(42), frame.data(), 1 << 20, ws);
  EXPECT_THAT(type.message(), HasSubstr("not a valid DataType"));
  auto null = encode(nullptr, 100, DataType::kFloat32, frame.data(), frame.size(), ws);
  EXPECT_THAT(null.message(), HasSubstr("null"));
}

TEST(CodecPlanes, EveryVariantGivesThePortableBytes) {
  for (DataType type : kPlaneTypes) {
    for (size_t count :
         {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{5000}}) {
      const Bytes data = randomBytes(count * dataTypeSize(type), count);
      Bytes want(data.size() + 1), planes(data.size() + 1);
      const int np = planeCount(type);
      auto pointers = [&](Bytes& b) {
        std::vector<uint8_t*> p(kMaxPlanes);
        for (int k = 0; k < np; ++k) p[k] = b.data() + k * count;
        return p;
      };
      splitPlanesWithIsa(PlanesIsa::kPortable, type, data.data(), count, pointers(want).data());
      for (PlanesIsa isa : {PlanesIsa::kPortable, PlanesIsa::kAvx2, PlanesIsa::kAvx512}) {
        if (!planesIsaSupported(isa)) continue;
        std::fill(planes.begin(), planes.end(), 0);
        splitPlanesWithIsa(isa, type, data.data(), count, pointers(planes).data());
        EXPECT_EQ(planes, want) << toString(type) << " isa " << static_cast<int>(isa);
        Bytes back(data.size());
        auto p = pointers(planes);
        const std::vector<const uint8_t*> cp(p.begin(), p.end());
        mergePlanesWithIsa(isa, type, cp.data(), count, back.data());
        EXPECT_EQ(back, data) << toString(type) << " isa " << static_cast<int>(isa);
      }
    }
  }
}

TEST(CodecPlanes, Bfloat16ExponentIsPlaneZero) {
  const uint16_t v = 0xc0a5;  // sign 1, exponent 0x81, mantissa 0x25
  uint8_t e = 0, m = 0;
  uint8_t* planes[2] = {&e, &m};
  splitPlanes(DataType::kBFloat16, &v, 1, planes);
  EXPECT_EQ(e, 0x81);
  EXPECT_EQ(m, 0x80 | 0x25);
}

TEST(CodecHuffman, LengthsAreLimitedAndComplete) {
  // Fibonacci counts give the deepest Huffman trees: unlimited, 30 symbols need 29 bits.
  std::array<uint32_t, 256> counts{};
  uint32_t a = 1, b = 1;
  for (int s = 0; s < 30; ++s) {
    counts[s * 7] = a;
    const uint32_t c = a + b;
    a = b;
    b = c;
  }
  uint8_t lengths[256];
  EXPECT_EQ(huffman::buildLengths(counts, lengths), 30);
  uint32_t kraft = 0;
  for (int s = 0; s < 256; ++s) {
    EXPECT_LE(lengths[s], huffman::kMaxLength);
    EXPECT_EQ(lengths[s] == 0, counts[s] == 0);
    if (lengths[s] != 0) kraft += 1u << (huffman::kMaxLength - lengths[s]);
  }
  EXPECT_EQ(kraft, huffman::kTableSize);

  // A plane with that distribution round-trips.
  Bytes plane;
  for (int s = 0; s < 30; ++s)
    plane.insert(plane.end(), std::min<uint32_t>(counts[s * 7], 3000), s * 7);
  std::shuffle(plane.begin(), plane.end(), std::mt19937_64(1));
  huffman::Counts c;
  huffman::countSymbols(plane.data(), plane.size(), c);
  ASSERT_EQ(huffman::buildLengths(c.total(), lengths), 30);
  Bytes coded(huffman::codedBytes(c, lengths) + huffman::kWriteSlack);
  auto pairs = std::make_unique<huffman::PairTable>();
  EXPECT_EQ(huffman::encodePlane(plane.data(), plane.size(), c, lengths, *pairs, coded.data()),
            coded.size() - huffman::kWriteSlack);
  Bytes back(plane.size());
  huffman::DecodeTable table;
  auto used = huffman::decodePlane(coded.data(), coded.size() - huffman::kWriteSlack, back.data(),
                                   back.size(), table);
  ASSERT_TRUE(used.ok()) << used.message();
  EXPECT_EQ(*used, coded.size() - huffman::kWriteSlack);
  EXPECT_EQ(back, plane);
}

// ---------------------------------------------------------------- corrupt frames

/// A small frame with a Huffman-coded block, a constant block and a raw block.
Bytes smallFrame(DataType* type) {
  *type = DataType::kBFloat16;
  Bytes data = gaussian(*type, 600, 7);
  std::fill(data.begin() + 512, data.begin() + 1024, 0);  // block 1: constant
  const Bytes tail = randomBytes(176, 3);                 // block 2: random, raw
  std::copy(tail.begin(), tail.end(), data.begin() + 1024);
  return encoded(data, *type, 512);
}

TEST(CodecCorrupt, SmallFrameHasEveryBlockKind) {
  DataType type;
  const Bytes frame = smallFrame(&type);
  size_t pos = kFrameHeaderBytes;
  std::vector<int> flags;
  auto header = readHeader(frame.data(), frame.size());
  ASSERT_TRUE(header.ok());
  Bytes back(1200);
  Workspace ws;
  for (uint64_t b = 0; b < header->blocks(); ++b) {
    flags.push_back(frame[pos]);
    if (frame[pos] == 1) flags.push_back(frame[pos + 5]);  // plane 0's mode
    auto size = decodeBlock(*header, b, frame.data() + pos, frame.size() - pos, back.data(), ws);
    ASSERT_TRUE(size.ok());
    pos += *size;
  }
  EXPECT_EQ(flags, (std::vector<int>{1, 2, 1, 1, 0}));  // Huffman, constant, raw
}

TEST(CodecCorrupt, TruncationAtEveryByteFails) {
  DataType type;
  const Bytes frame = smallFrame(&type);
  Bytes out(600 * 2);
  for (size_t size = 0; size < frame.size(); ++size) {
    Bytes cut(frame.begin(), frame.begin() + size);  // exactly `size` bytes: ASan sees overreads
    Workspace ws;
    EXPECT_FALSE(decode(cut.data(), cut.size(), out.data(), 600, type, ws).ok()) << size;
  }
  Bytes longer = frame;
  longer.push_back(0);
  EXPECT_THAT(decodeInto(longer, longer.size(), out, type).message(),
              HasSubstr("1 bytes after its last block"));
}

TEST(CodecCorrupt, EveryFlippedByteDecodesOrFailsWithoutCrashing) {
  DataType type;
  const Bytes frame = smallFrame(&type);
  Bytes out(600 * 2);
  int failures = 0;
  for (size_t i = 0; i < frame.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      Bytes bad = frame;
      bad[i] ^= mask;
      const Status status = decodeInto(bad, bad.size(), out, type);
      if (!status.ok()) {
        ++failures;
        EXPECT_THAT(status.message(), HasSubstr("codec: "));
      }
    }
  }
  EXPECT_GT(failures, 0);
  // Every byte of the header matters.
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) {
    Bytes bad = frame;
    bad[i] ^= 0x40;
    EXPECT_FALSE(decodeInto(bad, bad.size(), out, type).ok()) << "header byte " << i;
  }
}

TEST(CodecCorrupt, LengthFieldsAndHeaderFields) {
  DataType type;
  const Bytes frame = smallFrame(&type);
  Bytes out(600 * 2);
  const size_t block0 = kFrameHeaderBytes;
  auto with = [&](size_t offset, uint32_t value) {
    Bytes bad = frame;
    std::memcpy(bad.data() + offset, &value, 4);
    return decodeInto(bad, bad.size(), out, type).message();
  };
  uint32_t payload;
  std::memcpy(&payload, frame.data() + block0 + 1, 4);
  EXPECT_THAT(with(block0 + 1, payload + 1), HasSubstr("codec: block"));
  EXPECT_THAT(with(block0 + 1, payload - 1), HasSubstr("codec: block 0"));
  EXPECT_THAT(with(block0 + 1, 0xffffffffu), HasSubstr("coded blocks are smaller"));
  EXPECT_THAT(with(block0 + 1, 0), HasSubstr("plane 0 is missing"));

  // The Huffman plane's stream lengths: the last u32s before the streams.
  const size_t plane0 = block0 + 6;
  const size_t first = frame[plane0], last = frame[plane0 + 1];
  const size_t sizes = plane0 + 2 + (last - first + 2) / 2;
  uint32_t stream0;
  std::memcpy(&stream0, frame.data() + sizes, 4);
  EXPECT_THAT(with(sizes, stream0 + 1), HasSubstr("stream 0"));
  EXPECT_THAT(with(sizes, stream0 - 1), HasSubstr("stream 0"));
  EXPECT_THAT(with(sizes, 0xfffffff0u), HasSubstr("runs past the input"));

  Bytes bad = frame;
  bad[plane0 + 2] = 0xff;  // a code length of 15
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("code length 15"));
  bad = frame;
  bad[plane0 + 2] ^= 0x01;  // the lengths no longer form a complete code
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("code"));
  bad = frame;
  bad[block0] = 7;
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("unknown flags 7"));
  bad = frame;
  bad[block0 + 5] = 9;
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("unknown mode 9"));

  // Header fields, and a frame that is not what the caller expects.
  bad = frame;
  bad[5] = 200;
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("unknown type 200"));
  EXPECT_THAT(decodeInto(frame, frame.size(), out, DataType::kFloat16).message(),
              HasSubstr("frame holds bfloat16, expected float16"));
  Workspace ws;
  EXPECT_THAT(decode(frame.data(), frame.size(), out.data(), 599, type, ws).message(),
              HasSubstr("frame holds 600 elements, expected 599"));
  EXPECT_THAT(with(16, 0), HasSubstr("0 elements per block"));
  EXPECT_THAT(with(16, 0xffffffffu), HasSubstr("elements per block"));
  bad = frame;
  bad[4] = 2;
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("version 2"));
  bad = frame;
  bad[0] = 'X';
  EXPECT_THAT(decodeInto(bad, bad.size(), out, type).message(), HasSubstr("magic"));
}

TEST(CodecCorrupt, CodedBlockOfATypeWithoutPlanes) {
  Bytes frame = encoded(gaussian(DataType::kFloat32, 1000, 2), DataType::kFloat32);
  ASSERT_EQ(frame[kFrameHeaderBytes], 1);  // coded
  frame[5] = static_cast<uint8_t>(DataType::kInt32);
  Bytes out(4000);
  EXPECT_THAT(decodeInto(frame, frame.size(), out, DataType::kInt32).message(),
              HasSubstr("block 0 is coded, but int32 has no planes"));
}

}  // namespace
}  // namespace grove::codec
