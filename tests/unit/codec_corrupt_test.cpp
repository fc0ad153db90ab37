// Corrupt codec frames (src/codec): truncation at every byte, every byte flipped, each length
// field and header field changed, and frames that are not what the caller expects, each
// failing with a "codec: " message naming what is wrong, never crashing or reading outside
// the frame (the ASan preset runs these too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "codec/codec.hpp"
#include "support/codec_data.hpp"

namespace grove::codec {
namespace {

using namespace testdata;  // NOLINT: the shared data and helpers of every codec test
using ::testing::HasSubstr;

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
