#include "exec/link_codec.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "codec/planes.hpp"

namespace grove::exec {

bool compressibleType(DataType type) { return codec::planeCount(type) > 0; }

LinkCodec::LinkCodec(std::vector<uint8_t> compressTo, size_t slotBytes,
                     std::function<bool(int)> measuredSlow)
    : compressTo_(std::move(compressTo)),
      measuredSlow_(std::move(measuredSlow)),
      peers_(compressTo_.size()),
      workspace_(codec::kDefaultBlockBytes),
      // The largest frame of a slot: its elements of the smallest compressible type.
      frame_(codec::maxEncodedBytes(slotBytes / 2, DataType::kBFloat16)),
      decoded_(slotBytes),
      combined_(slotBytes) {}

bool LinkCodec::compressesTo(int peer) const {
  if (peer < 0 || static_cast<size_t>(peer) >= compressTo_.size()) return false;
  switch (compressTo_[peer]) {
    case kSendCompressed:
      return true;
    case kSendCompressedIfMeasuredSlow:
      return measuredSlow_ && measuredSlow_(peer);
    default:
      return false;
  }
}

bool LinkCodec::shouldCompress(int peer, DataType type, size_t bytes) {
  if (bytes < kMinCompressedMessageBytes || !compressibleType(type) || !compressesTo(peer)) {
    return false;
  }
  PeerState& state = peers_[peer];
  if (state.rawLeft > 0) {
    --state.rawLeft;
    return false;
  }
  return true;
}

size_t LinkCodec::encode(int peer, const void* data, size_t elements, DataType type, void* slot,
                         size_t rawBytes) {
  // The encoder needs room for the raw form plus headers and slack; the slot has only the
  // raw size. Encode into frame_ and copy the (smaller) frame: a copy of at most 2/3 of the
  // message, an order of magnitude faster than the coding itself.
  Expected<size_t> size =
      codec::encode(data, elements, type, frame_.data(), frame_.size(), workspace_);
  PeerState& state = peers_[peer];
  if (!size.ok() || size.value() > rawBytes - rawBytes / kMinGainFraction) {
    ++stats_.messagesTriedRaw;
    if (++state.misses >= kMissesBeforeBackoff) {
      state.misses = 0;
      state.rawLeft = kRawMessagesAfterMisses;
    }
    return 0;
  }
  state.misses = 0;
  std::memcpy(slot, frame_.data(), size.value());
  ++stats_.messagesCompressed;
  stats_.rawBytesCompressed += rawBytes;
  stats_.framesBytes += size.value();
  return size.value();
}

Status LinkCodec::decode(const void* frame, size_t frameBytes, void* out, size_t elements,
                         DataType type) {
  ++stats_.messagesDecoded;
  return codec::decode(frame, frameBytes, out, elements, type, workspace_);
}

CodecRates measuredCodecRates() {
  static const CodecRates rates = []() -> CodecRates {
    // 1 MiB of bfloat16 values drawn like a gradient's (normal, a spread of magnitudes):
    // what the links that compress will mostly carry.
    constexpr size_t kCount = 512 * 1024;
    std::vector<uint16_t> values(kCount);
    std::mt19937 random(12345);
    std::normal_distribution<float> normal(0.0f, 0.01f);
    for (uint16_t& v : values) {
      const float f = normal(random);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      v = static_cast<uint16_t>(bits >> 16);
    }
    codec::Workspace workspace(codec::kDefaultBlockBytes);
    std::vector<uint8_t> frame(codec::maxEncodedBytes(kCount, DataType::kBFloat16));
    std::vector<uint16_t> decoded(kCount);
    using Clock = std::chrono::steady_clock;
    double encodeBest = 1e30;
    double decodeBest = 1e30;
    for (int round = 0; round < 3; ++round) {
      const auto t0 = Clock::now();
      const Expected<size_t> size = codec::encode(values.data(), kCount, DataType::kBFloat16,
                                                  frame.data(), frame.size(), workspace);
      const auto t1 = Clock::now();
      if (!size.ok()) return {};
      if (!codec::decode(frame.data(), size.value(), decoded.data(), kCount, DataType::kBFloat16,
                         workspace)
               .ok()) {
        return {};
      }
      const auto t2 = Clock::now();
      encodeBest = std::min(encodeBest, std::chrono::duration<double>(t1 - t0).count());
      decodeBest = std::min(decodeBest, std::chrono::duration<double>(t2 - t1).count());
    }
    const double bytes = static_cast<double>(kCount * 2);
    return CodecRates{bytes / encodeBest, bytes / decodeBest};
  }();
  return rates;
}

double measuredCodecBytesPerSecond() {
  const CodecRates rates = measuredCodecRates();
  return std::min(rates.encode, rates.decode);
}

}  // namespace grove::exec
