// The bytes the TCP transport puts on the wire, in one place so that docs/transports.md and
// the code cannot drift apart.
//
// Every connection carries one direction of one (src rank -> dst rank, stream) pair. After
// the secret handshake (bootstrap::authenticate) the connecting side sends a Hello, the
// accepting side validates it and answers with an Ack; from then on both sides speak frames:
// a fixed 16-byte header followed by `bytes` payload bytes (data frames only, src -> dst).
// Control frames (abort, bye) may travel either way. All integers are little-endian and
// every field read from the wire is range-checked before it is used.
#pragma once

#include <fmt/format.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace grove::transport::tcp {

static_assert(std::endian::native == std::endian::little,
              "the TCP wire format is little-endian; add byte swaps for this host");

inline constexpr uint32_t kFrameMagic = 0x47524654;  ///< "TFRG": start of every frame.
inline constexpr uint32_t kHelloMagic = 0x47524848;  ///< "HHRG": the hello and its ack.
inline constexpr uint16_t kWireVersion = 1;

/// What a frame means.
enum class FrameKind : uint16_t {
  kData = 0,   ///< One message of a FIFO: `bytes` payload bytes for `lane`.
  kAbort = 1,  ///< The sender aborted: every pending operation with it must fail.
  kBye = 2,    ///< The sender closes this connection cleanly; the EOF that follows is no error.
};

/// Frame header: {u32 magic, u16 lane, u16 kind, u64 bytes}.
struct FrameHeader {
  static constexpr size_t kBytes = 16;
  uint32_t magic = kFrameMagic;
  uint16_t lane = 0;
  uint16_t kind = 0;
  uint64_t bytes = 0;

  void encode(unsigned char* out) const {
    std::memcpy(out, &magic, 4);
    std::memcpy(out + 4, &lane, 2);
    std::memcpy(out + 6, &kind, 2);
    std::memcpy(out + 8, &bytes, 8);
  }
  static FrameHeader decode(const unsigned char* in) {
    FrameHeader header;
    std::memcpy(&header.magic, in, 4);
    std::memcpy(&header.lane, in + 4, 2);
    std::memcpy(&header.kind, in + 6, 2);
    std::memcpy(&header.bytes, in + 8, 8);
    return header;
  }
};

/// What the receiving end of a connection allows in a frame header.
struct FrameRules {
  bool acceptsData = false;  ///< An incoming connection whose peer has not said bye yet.
  uint64_t slotBytes = 0;    ///< Largest data payload (the receive FIFO's slot size).
  int streams = 1;           ///< socketsPerPeer: lane L travels on stream L % streams.
  int stream = 0;            ///< This connection's stream.
};

/// The receiver's verdict on a frame header.
enum class FrameCheck {
  kOk,
  kBadMagic,        ///< Not the start of a frame: the byte stream is out of step or garbage.
  kUnknownKind,     ///< A kind this wire version does not define.
  kUnexpectedData,  ///< Data on an outgoing connection, or after the peer's bye.
  kTooLarge,        ///< More payload bytes than a slot holds.
  kWrongStream,     ///< The lane belongs to another stream of this peer.
};

/// Checks every field of a received header before any of it is used (a pure function: the
/// fuzzer calls it on arbitrary bytes). Only a kOk data header may size a read.
inline FrameCheck checkFrameHeader(const FrameHeader& header, const FrameRules& rules) {
  if (header.magic != kFrameMagic) return FrameCheck::kBadMagic;
  switch (static_cast<FrameKind>(header.kind)) {
    case FrameKind::kData:
      if (!rules.acceptsData) return FrameCheck::kUnexpectedData;
      if (header.bytes > rules.slotBytes) return FrameCheck::kTooLarge;
      if (rules.streams < 1 || header.lane % rules.streams != rules.stream) {
        return FrameCheck::kWrongStream;
      }
      return FrameCheck::kOk;
    case FrameKind::kAbort:
    case FrameKind::kBye:
      return FrameCheck::kOk;
  }
  return FrameCheck::kUnknownKind;
}

/// Why a header was rejected, naming the sending rank `peer` (for the connection's error).
inline std::string describeFrameProblem(FrameCheck check, const FrameHeader& header,
                                        const FrameRules& rules, int peer) {
  switch (check) {
    case FrameCheck::kOk:
      break;
    case FrameCheck::kBadMagic:
      return fmt::format("rank {} sent a frame with bad magic {:#010x} (expected {:#010x})", peer,
                         header.magic, kFrameMagic);
    case FrameCheck::kUnknownKind:
      return fmt::format("rank {} sent a frame of unknown kind {} (expected 0, 1 or 2)", peer,
                         header.kind);
    case FrameCheck::kUnexpectedData:
      return fmt::format("rank {} sent a data frame on a connection that carries none", peer);
    case FrameCheck::kTooLarge:
      return fmt::format("rank {} sent a frame of {} bytes on lane {}, more than the slot size {}",
                         peer, header.bytes, header.lane, rules.slotBytes);
    case FrameCheck::kWrongStream:
      return fmt::format("rank {} sent lane {} on stream {} (expected stream {})", peer,
                         header.lane, rules.stream,
                         rules.streams < 1 ? -1 : header.lane % rules.streams);
  }
  return fmt::format("rank {} sent an acceptable frame header", peer);
}

/// First message of the connecting side: {u32 magic, u16 version, u16 stream, u32 src,
/// u32 dst, u64 slotBytes}.
struct Hello {
  static constexpr size_t kBytes = 24;
  uint32_t magic = kHelloMagic;
  uint16_t version = kWireVersion;
  uint16_t stream = 0;
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t slotBytes = 0;

  void encode(unsigned char* out) const {
    std::memcpy(out, &magic, 4);
    std::memcpy(out + 4, &version, 2);
    std::memcpy(out + 6, &stream, 2);
    std::memcpy(out + 8, &src, 4);
    std::memcpy(out + 12, &dst, 4);
    std::memcpy(out + 16, &slotBytes, 8);
  }
  static Hello decode(const unsigned char* in) {
    Hello hello;
    std::memcpy(&hello.magic, in, 4);
    std::memcpy(&hello.version, in + 4, 2);
    std::memcpy(&hello.stream, in + 6, 2);
    std::memcpy(&hello.src, in + 8, 4);
    std::memcpy(&hello.dst, in + 12, 4);
    std::memcpy(&hello.slotBytes, in + 16, 8);
    return hello;
  }
};

/// The acceptor's answer to a Hello: {u32 magic, u32 status}.
enum class HelloStatus : uint32_t {
  kAccepted = 0,
  kBadVersion = 1,
  kWrongDestination = 2,  ///< dst is not the acceptor's rank.
  kUnknownSource = 3,     ///< src is not one of the acceptor's TCP peers.
  kBadStream = 4,         ///< stream >= the acceptor's socketsPerPeer.
  kGeometryMismatch = 5,  ///< slotBytes differs (GROVE_SLOT_BYTES not the same everywhere).
};

/// Human-readable meaning of a HelloStatus (for error messages on the connecting side).
inline const char* describe(HelloStatus status) {
  switch (status) {
    case HelloStatus::kAccepted:
      return "accepted";
    case HelloStatus::kBadVersion:
      return "different grove wire version";
    case HelloStatus::kWrongDestination:
      return "the listener is a different rank";
    case HelloStatus::kUnknownSource:
      return "this rank is not a TCP peer of the listener";
    case HelloStatus::kBadStream:
      return "stream index beyond the listener's GROVE_NSOCKS";
    case HelloStatus::kGeometryMismatch:
      return "different GROVE_SLOT_BYTES";
  }
  return "unknown status";
}

struct HelloAck {
  static constexpr size_t kBytes = 8;
  uint32_t magic = kHelloMagic;
  uint32_t status = 0;

  void encode(unsigned char* out) const {
    std::memcpy(out, &magic, 4);
    std::memcpy(out + 4, &status, 4);
  }
  static HelloAck decode(const unsigned char* in) {
    HelloAck ack;
    std::memcpy(&ack.magic, in, 4);
    std::memcpy(&ack.status, in + 4, 4);
    return ack;
  }
};

}  // namespace grove::transport::tcp
