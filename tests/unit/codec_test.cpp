// The lossless codec of src/codec: round trips of every DataType over several block sizes
// and counts (0, 1, block edges, non-multiples), special values bit for bit (NaN payloads,
// ±inf, subnormals, −0, every 16-bit pattern), the exact sizes of raw, constant and empty
// frames, the plane variants against each other, the Huffman code's length limit, block-by-
// block decoding and argument checks. Corrupt frames: codec_corrupt_test.cpp.
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
#include "support/codec_data.hpp"

namespace grove::codec {
namespace {

using namespace testdata;  // NOLINT: the shared data and helpers of every codec test
using ::testing::HasSubstr;

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
  FrameHeader made = *header;
  made.blockElements = 0;
  EXPECT_THAT(
      decodeBlock(made, 0, frame.data() + kFrameHeaderBytes, 100, back.data(), ws).message(),
      HasSubstr("a header readHeader would not return"));
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
      splitPlanesWithIsa(common::Isa::kPortable, type, data.data(), count, pointers(want).data());
      for (common::Isa isa : common::kIsas) {
        if (!common::isaRuns(isa)) continue;
        std::fill(planes.begin(), planes.end(), 0);
        splitPlanesWithIsa(isa, type, data.data(), count, pointers(planes).data());
        EXPECT_EQ(planes, want) << toString(type) << " isa " << common::toString(isa);
        Bytes back(data.size());
        auto p = pointers(planes);
        const std::vector<const uint8_t*> cp(p.begin(), p.end());
        mergePlanesWithIsa(isa, type, cp.data(), count, back.data());
        EXPECT_EQ(back, data) << toString(type) << " isa " << common::toString(isa);
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

}  // namespace
}  // namespace grove::codec
