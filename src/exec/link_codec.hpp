// Compression on slow links (GROVE_COMPRESS, docs/compression.md): the executor's side of
// the codec. A rank encodes a message it sends to a peer whose link is slower than the codec
// (codec/codec.hpp) straight into the message's FIFO slot, and marks it
// (MessageTag::kCompressed); a receiver decodes every marked message, whatever link it came
// over. Messages describe themselves, so the sender alone decides and the ranks need not
// agree on which links compress: a message that would not shrink goes raw, and a link whose
// messages keep not shrinking (incompressible data) stops trying for a while.
//
// One LinkCodec serves a communicator: its operations run one at a time (CommState advances
// the oldest), so one workspace and one set of staging buffers suffice, allocated once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "codec/codec.hpp"
#include "common/status.hpp"
#include "grove/types.hpp"

namespace grove::exec {

/// Messages below this are sent raw: the frame header and the coder's tables would eat what
/// a few KiB could save, and small messages are latency, not bandwidth.
inline constexpr size_t kMinCompressedMessageBytes = 4096;

/// A message must shrink by 1/kMinGainFraction of its raw size to travel compressed
/// (decoding costs more than copying: a frame that saves almost nothing is not worth it).
inline constexpr size_t kMinGainFraction = 32;

/// After this many messages in a row to one peer that did not shrink, that peer's messages
/// go raw for the next kRawMessagesAfterMisses, then one is tried again: incompressible data
/// costs one trial encode per that many messages.
inline constexpr uint32_t kMissesBeforeBackoff = 4;
inline constexpr uint32_t kRawMessagesAfterMisses = 256;

/// What a rank does with the messages it sends to a peer over the network (one per rank in
/// LinkCodec's `compressTo`).
inline constexpr uint8_t kSendRaw = 0;
inline constexpr uint8_t kSendCompressed = 1;
/// Nothing said what the link's rate is: raw, until the transport measured it slow (asked
/// through LinkCodec's `measuredSlow`, message by message, so a link can change its mind).
inline constexpr uint8_t kSendCompressedIfMeasuredSlow = 2;

/// Whether the codec can shrink values of `type` (float32, bfloat16, float16).
bool compressibleType(DataType type);

/// What one rank's link codec did (GROVE_DEBUG=INFO prints it when the communicator ends).
struct LinkCodecStats {
  uint64_t messagesCompressed = 0;
  uint64_t rawBytesCompressed = 0;  ///< Raw size of the messages sent compressed.
  uint64_t framesBytes = 0;         ///< Their size on the wire.
  uint64_t messagesTriedRaw = 0;    ///< Encoded but sent raw: they did not shrink enough.
  uint64_t messagesForwarded = 0;   ///< Compressed messages passed on without re-encoding.
  uint64_t messagesDecoded = 0;
};

class LinkCodec {
 public:
  /// `compressTo[q]`: what to do with messages to rank q (kSendRaw, kSendCompressed or
  /// kSendCompressedIfMeasuredSlow, which asks `measuredSlow(q)`). `slotBytes`: the largest
  /// message (the FIFO slot), for which every buffer is allocated now.
  LinkCodec(std::vector<uint8_t> compressTo, size_t slotBytes,
            std::function<bool(int)> measuredSlow = {});

  /// Whether a message of `bytes` bytes of `type` to `peer` should be encoded now.
  /// (Counts down a peer's backoff: call once per message.)
  bool shouldCompress(int peer, DataType type, size_t bytes);

  /// Encodes `elements` values of `type` at `data` (raw size `rawBytes`) into `slot` (room
  /// for `rawBytes`): returns the frame's size, or 0 when it did not shrink enough (the
  /// slot's contents are then undefined and the caller sends the raw bytes).
  size_t encode(int peer, const void* data, size_t elements, DataType type, void* slot,
                size_t rawBytes);

  /// Decodes the frame of `frameBytes` bytes at `frame` into `elements` values of `type` at
  /// `out`. Fails (kInvalidArgument, the codec's message) unless the frame holds exactly
  /// that.
  Status decode(const void* frame, size_t frameBytes, void* out, size_t elements, DataType type);

  /// Room for one decoded message or one combined message before encoding (slotBytes).
  char* decodedStaging() { return decoded_.data(); }
  char* combinedStaging() { return combined_.data(); }

  /// Messages to `peer` are compressed now (a compressed message passes on as it came).
  bool compressesTo(int peer) const;
  void countForwarded() { ++stats_.messagesForwarded; }
  const LinkCodecStats& stats() const { return stats_; }

 private:
  struct PeerState {
    uint32_t misses = 0;   // messages in a row that did not shrink
    uint32_t rawLeft = 0;  // messages still to send raw before trying again
  };
  std::vector<uint8_t> compressTo_;
  std::function<bool(int)> measuredSlow_;
  std::vector<PeerState> peers_;
  codec::Workspace workspace_;
  std::vector<uint8_t> frame_;  // maxEncodedBytes of a slot: the encoder's whole-frame room
  std::vector<char> decoded_;
  std::vector<char> combined_;
  LinkCodecStats stats_;
};

/// The codec's rates on this machine in bytes per second of raw data, encoding and decoding
/// bfloat16 values drawn like a gradient's (best of 3 over 1 MiB), measured once per process
/// on first use (a few milliseconds); 0 when the codec failed.
struct CodecRates {
  double encode = 0;
  double decode = 0;
  /// The rate at which one thread encodes a byte and decodes another: what a rank of a
  /// ring or tree collective sustains, since it decodes what it receives and encodes what it
  /// sends, both on its own thread (so half the slower direction's rate, or less).
  double roundTrip() const { return encode > 0 && decode > 0 ? 1 / (1 / encode + 1 / decode) : 0; }
};
CodecRates measuredCodecRates();

/// The slower of measuredCodecRates()'s encode and decode: the rate one end of a link codes
/// at (the simulator's codecGBps, which charges each end of a message separately).
double measuredCodecBytesPerSecond();

}  // namespace grove::exec
