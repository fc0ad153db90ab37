// Data and helpers shared by the codec's tests (codec_test.cpp, codec_corrupt_test.cpp):
// near-Gaussian and random tensors of every type, and encode/decode wrappers that fail the
// test on an error.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codec/codec.hpp"
#include "exec/half.hpp"
#include "grove/types.hpp"

namespace grove::codec::testdata {

using Bytes = std::vector<uint8_t>;
using ::testing::HasSubstr;

constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,   DataType::kUint64,
                                  DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                  DataType::kBFloat16};
constexpr DataType kPlaneTypes[] = {DataType::kFloat16, DataType::kFloat32, DataType::kBFloat16};

/// `count` values of `type` like a trained tensor's: normal(0, 0.02) in the type's format
/// (integers: the same values scaled), so the exponent planes are worth coding.
inline Bytes gaussian(DataType type, size_t count, uint64_t seed) {
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

inline Bytes randomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

inline Bytes encoded(const Bytes& data, DataType type, size_t blockBytes = kDefaultBlockBytes) {
  const size_t count = data.size() / dataTypeSize(type);
  Bytes frame(maxEncodedBytes(count, type, blockBytes));
  Workspace ws;
  auto size = encode(data.data(), count, type, frame.data(), frame.size(), ws, blockBytes);
  EXPECT_TRUE(size.ok()) << size.message();
  frame.resize(size.ok() ? *size : 0);
  return frame;
}

inline Status decodeInto(const Bytes& frame, size_t size, Bytes& out, DataType type) {
  Workspace ws;
  return decode(frame.data(), size, out.data(), out.size() / dataTypeSize(type), type, ws);
}

inline void expectRoundTrip(const Bytes& data, DataType type, size_t blockBytes) {
  const size_t count = data.size() / dataTypeSize(type);
  const Bytes frame = encoded(data, type, blockBytes);
  EXPECT_LE(frame.size(), maxEncodedBytes(count, type, blockBytes));
  Bytes back(data.size(), 0xa5);
  const Status status = decodeInto(frame, frame.size(), back, type);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(back, data) << toString(type) << " count " << count << " block " << blockBytes;
}

}  // namespace grove::codec::testdata
