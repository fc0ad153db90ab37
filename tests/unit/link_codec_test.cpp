// The executor's link codec (exec/link_codec.hpp, GROVE_COMPRESS): which messages it encodes
// (peers whose link compresses, the coded types, at least kMinCompressedMessageBytes), that a
// message that does not shrink goes raw and a link that keeps not shrinking backs off for
// kRawMessagesAfterMisses messages, that what it encodes into a slot of the raw size decodes
// bit for bit, and that a frame of the wrong count or a damaged one is refused with the
// codec's message. The collectives over compressed TCP links: tests/process (compressed).
#include "exec/link_codec.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "support/codec_data.hpp"

namespace grove::exec {
namespace {

using codec::testdata::Bytes;
using codec::testdata::gaussian;
using codec::testdata::randomBytes;
using ::testing::HasSubstr;

constexpr size_t kSlotBytes = 262144;

TEST(LinkCodec, EncodesOnlyCodedTypesToCompressingPeersFromTheSmallestSize) {
  LinkCodec codec({0, 1, 0}, kSlotBytes);
  EXPECT_TRUE(codec.shouldCompress(1, DataType::kBFloat16, kMinCompressedMessageBytes));
  EXPECT_TRUE(codec.shouldCompress(1, DataType::kFloat32, kSlotBytes));
  EXPECT_TRUE(codec.shouldCompress(1, DataType::kFloat16, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kBFloat16, kMinCompressedMessageBytes - 1));
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kInt32, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kFloat64, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(0, DataType::kBFloat16, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(2, DataType::kBFloat16, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(3, DataType::kBFloat16, kSlotBytes));   // no such rank
  EXPECT_FALSE(codec.shouldCompress(-1, DataType::kBFloat16, kSlotBytes));  // nor this
  EXPECT_TRUE(codec.compressesTo(1));
  EXPECT_FALSE(codec.compressesTo(2));
}

// A link nothing gave a rate for follows the transport's measure, message by message.
TEST(LinkCodec, ALinkOfUnknownRateCompressesWhileItsMeasureSaysSlow) {
  std::vector<int> asked;
  bool slow = false;
  LinkCodec codec({kSendRaw, kSendCompressedIfMeasuredSlow, kSendCompressed}, kSlotBytes,
                  [&](int peer) {
                    asked.push_back(peer);
                    return slow;
                  });
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kBFloat16, kSlotBytes));
  EXPECT_FALSE(codec.compressesTo(1));
  slow = true;
  EXPECT_TRUE(codec.shouldCompress(1, DataType::kBFloat16, kSlotBytes));
  EXPECT_TRUE(codec.compressesTo(1));
  slow = false;  // measured faster since: raw again
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kFloat32, kSlotBytes));
  // Not asked for a message too small or of a type the codec cannot shrink, nor for peers
  // whose policy is fixed.
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kInt32, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(1, DataType::kBFloat16, kMinCompressedMessageBytes - 1));
  EXPECT_TRUE(codec.shouldCompress(2, DataType::kBFloat16, kSlotBytes));
  EXPECT_FALSE(codec.shouldCompress(0, DataType::kBFloat16, kSlotBytes));
  EXPECT_EQ(asked, std::vector<int>({1, 1, 1, 1, 1}));
  // Without a measure to ask, such a link stays raw.
  LinkCodec unmeasured({kSendRaw, kSendCompressedIfMeasuredSlow}, kSlotBytes);
  EXPECT_FALSE(unmeasured.shouldCompress(1, DataType::kBFloat16, kSlotBytes));
}

TEST(LinkCodec, AGradientShrinksIntoItsSlotAndDecodesBitForBit) {
  for (DataType type : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16}) {
    const size_t count = kSlotBytes / dataTypeSize(type);
    const Bytes values = gaussian(type, count, 7);
    LinkCodec codec({0, 1}, kSlotBytes);
    std::vector<uint8_t> slot(kSlotBytes);
    const size_t size = codec.encode(1, values.data(), count, type, slot.data(), kSlotBytes);
    ASSERT_GT(size, 0u) << toString(type);
    EXPECT_LT(size, kSlotBytes - kSlotBytes / kMinGainFraction) << toString(type);
    std::vector<uint8_t> decoded(kSlotBytes, 0xA5);
    ASSERT_TRUE(codec.decode(slot.data(), size, decoded.data(), count, type).ok());
    EXPECT_EQ(std::memcmp(decoded.data(), values.data(), kSlotBytes), 0) << toString(type);
    EXPECT_EQ(codec.stats().messagesCompressed, 1u);
    EXPECT_EQ(codec.stats().rawBytesCompressed, kSlotBytes);
    EXPECT_EQ(codec.stats().framesBytes, size);
    EXPECT_EQ(codec.stats().messagesDecoded, 1u);
  }
}

TEST(LinkCodec, RandomBitsGoRawAndTheLinkBacksOffThenTriesAgain) {
  const size_t count = kSlotBytes / 4;
  const Bytes bits = randomBytes(kSlotBytes, 3);
  LinkCodec codec({0, 1}, kSlotBytes);
  std::vector<uint8_t> slot(kSlotBytes);
  for (uint32_t i = 0; i < kMissesBeforeBackoff; ++i) {
    ASSERT_TRUE(codec.shouldCompress(1, DataType::kFloat32, kSlotBytes)) << i;
    EXPECT_EQ(codec.encode(1, bits.data(), count, DataType::kFloat32, slot.data(), kSlotBytes), 0u);
  }
  EXPECT_EQ(codec.stats().messagesTriedRaw, kMissesBeforeBackoff);
  for (uint32_t i = 0; i < kRawMessagesAfterMisses; ++i) {
    ASSERT_FALSE(codec.shouldCompress(1, DataType::kFloat32, kSlotBytes)) << i;
  }
  EXPECT_TRUE(codec.shouldCompress(1, DataType::kFloat32, kSlotBytes));
  // A message that shrinks resets the count of misses.
  const Bytes gradient = gaussian(DataType::kFloat32, count, 5);
  for (uint32_t i = 0; i + 1 < kMissesBeforeBackoff; ++i) {
    EXPECT_EQ(codec.encode(1, bits.data(), count, DataType::kFloat32, slot.data(), kSlotBytes), 0u);
  }
  EXPECT_GT(codec.encode(1, gradient.data(), count, DataType::kFloat32, slot.data(), kSlotBytes),
            0u);
  EXPECT_EQ(codec.encode(1, bits.data(), count, DataType::kFloat32, slot.data(), kSlotBytes), 0u);
  EXPECT_TRUE(codec.shouldCompress(1, DataType::kFloat32, kSlotBytes));
}

TEST(LinkCodec, RefusesAFrameOfAnotherCountOrDamagedWithTheCodecsMessage) {
  const size_t count = 4096;
  const Bytes values = gaussian(DataType::kBFloat16, count, 11);
  LinkCodec codec({0, 1}, kSlotBytes);
  std::vector<uint8_t> slot(count * 2);
  const size_t size =
      codec.encode(1, values.data(), count, DataType::kBFloat16, slot.data(), count * 2);
  ASSERT_GT(size, 0u);
  std::vector<uint8_t> out(count * 2 + 64, 0xEE);
  Status wrongCount = codec.decode(slot.data(), size, out.data(), count - 1, DataType::kBFloat16);
  ASSERT_FALSE(wrongCount.ok());
  EXPECT_THAT(wrongCount.message(), HasSubstr("codec: "));
  Status wrongType = codec.decode(slot.data(), size, out.data(), count / 2, DataType::kFloat32);
  EXPECT_FALSE(wrongType.ok());
  Status truncated = codec.decode(slot.data(), size - 1, out.data(), count, DataType::kBFloat16);
  EXPECT_FALSE(truncated.ok());
  for (size_t i = count * 2; i < out.size(); ++i) ASSERT_EQ(out[i], 0xEE) << i;  // nothing past
}

TEST(LinkCodec, MeasuresTheCodecOncePerProcess) {
  const double rate = measuredCodecBytesPerSecond();
  EXPECT_GT(rate, 0.0);
  EXPECT_EQ(measuredCodecBytesPerSecond(), rate);
  const CodecRates rates = measuredCodecRates();
  EXPECT_EQ(rate, std::min(rates.encode, rates.decode));
  // Encoding one byte and decoding another takes the two times together.
  EXPECT_DOUBLE_EQ(rates.roundTrip(), 1 / (1 / rates.encode + 1 / rates.decode));
  EXPECT_LT(rates.roundTrip(), rate);
  EXPECT_DOUBLE_EQ((CodecRates{2e9, 2e9}.roundTrip()), 1e9);
  EXPECT_EQ((CodecRates{2e9, 0}.roundTrip()), 0.0);  // a failed measurement: no rate
}

}  // namespace
}  // namespace grove::exec
