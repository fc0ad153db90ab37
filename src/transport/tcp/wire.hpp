// The bytes the TCP transport puts on the wire, in one place so that docs/transports.md and
// the code cannot drift apart.
//
// Every connection carries one direction of one (src rank -> dst rank, stream) pair. After
// the secret handshake (bootstrap::authenticate) the connecting side sends a Hello, the
// accepting side validates it and answers with an Ack; from then on both sides speak frames:
// a fixed 64-byte header followed by `bytes` payload bytes (data frames src -> dst, and the
// abort frame's notice). A connection may have rails (one more socket per extra network
// interface, opened with a Hello naming the rail): a large data frame's header says how many
// of its payload bytes travel on each rail, and those pieces follow on the rails' sockets in
// frame order, bare (no header of their own). A data frame's header carries the message's
// MessageTag (which call it belongs to, and its checksum under GROVE_CHECKSUM) from the sender's
// slot to the receiver's. Control frames (abort, bye, heartbeat) may travel either way. All
// integers are little-endian and every field read from the wire is range-checked before it
// is used.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "transport/fifo.hpp"

namespace grove::transport::tcp {

static_assert(std::endian::native == std::endian::little,
              "the TCP wire format is little-endian; add byte swaps for this host");

inline constexpr uint32_t kFrameMagic = 0x47524654;  ///< "TFRG": start of every frame.
inline constexpr uint32_t kHelloMagic = 0x47524848;  ///< "HHRG": the hello and its ack.
/// 2: abort frames carry a notice (origin rank and cause); heartbeat frames.
/// 3: data frame headers carry the message's tag; abort notices carry flags.
/// 4: headers carry the rails' shares of a data frame; the hello names its rail.
inline constexpr uint16_t kWireVersion = 4;
/// Sockets one connection may stripe over: the primary (rail 0) and up to 3 rails.
inline constexpr int kMaxRails = 4;
/// Longest cause an abort notice carries (= FailureInfo::kMaxCauseBytes).
inline constexpr size_t kMaxAbortCause = 480;
/// An abort frame's payload: {u32 origin, u32 flags, cause bytes}: 8 to 8 + kMaxAbortCause
/// bytes.
inline constexpr size_t kAbortNoticeMinBytes = 8;
inline constexpr size_t kAbortNoticeMaxBytes = 8 + kMaxAbortCause;
/// AbortNotice flags: the failure is a usage error (FailureInfo::usageError). No other bit
/// is defined; a notice with another bit set is refused.
inline constexpr uint32_t kAbortUsageError = 1;

/// What a frame means.
enum class FrameKind : uint16_t {
  kData = 0,       ///< One message of a FIFO: `bytes` payload bytes for `lane`.
  kAbort = 1,      ///< The sender aborted; the payload is an AbortNotice saying where and why.
  kBye = 2,        ///< The sender closes this connection cleanly; the EOF that follows is no error.
  kHeartbeat = 3,  ///< No payload: the sender is alive (sent when it had sent nothing for 1 s).
};

/// Frame header: {u32 magic, u16 lane, u16 kind, u64 bytes, MessageTag tag (32 bytes: u64
/// call, u64 count, u32 checksum, i32 root, u32 algorithm, u8 collective, u8 type, u8 op,
/// u8 flags), u32 railBytes[3], u32 reserved (0)}. The tag is zero in control frames. Its
/// fields are only compared, never used to size or index anything, so no value of it is
/// unsafe. railBytes[i]: payload bytes that rail i+1 carries; the primary socket carries the
/// first bytes - sum(railBytes) bytes, rail 1 the next railBytes[0], and so on. Zero in
/// control frames.
struct FrameHeader {
  static constexpr size_t kBytes = 64;
  uint32_t magic = kFrameMagic;
  uint16_t lane = 0;
  uint16_t kind = 0;
  uint64_t bytes = 0;
  MessageTag tag;
  uint32_t railBytes[kMaxRails - 1] = {};
  uint32_t reserved = 0;

  /// Payload bytes on the rails (the rest is on the primary socket).
  uint64_t railTotal() const {
    uint64_t total = 0;
    for (uint32_t piece : railBytes) total += piece;
    return total;
  }

  void encode(unsigned char* out) const {
    std::memcpy(out, &magic, 4);
    std::memcpy(out + 4, &lane, 2);
    std::memcpy(out + 6, &kind, 2);
    std::memcpy(out + 8, &bytes, 8);
    std::memcpy(out + 16, &tag.call, 8);
    std::memcpy(out + 24, &tag.count, 8);
    std::memcpy(out + 32, &tag.checksum, 4);
    std::memcpy(out + 36, &tag.root, 4);
    std::memcpy(out + 40, &tag.algorithm, 4);
    out[44] = tag.collective;
    out[45] = tag.type;
    out[46] = tag.op;
    out[47] = tag.flags;
    std::memcpy(out + 48, railBytes, sizeof railBytes);
    std::memcpy(out + 60, &reserved, 4);
  }
  static FrameHeader decode(const unsigned char* in) {
    FrameHeader header;
    std::memcpy(&header.magic, in, 4);
    std::memcpy(&header.lane, in + 4, 2);
    std::memcpy(&header.kind, in + 6, 2);
    std::memcpy(&header.bytes, in + 8, 8);
    std::memcpy(&header.tag.call, in + 16, 8);
    std::memcpy(&header.tag.count, in + 24, 8);
    std::memcpy(&header.tag.checksum, in + 32, 4);
    std::memcpy(&header.tag.root, in + 36, 4);
    std::memcpy(&header.tag.algorithm, in + 40, 4);
    header.tag.collective = in[44];
    header.tag.type = in[45];
    header.tag.op = in[46];
    header.tag.flags = in[47];
    std::memcpy(header.railBytes, in + 48, sizeof header.railBytes);
    std::memcpy(&header.reserved, in + 60, 4);
    return header;
  }
};

/// What the receiving end of a connection allows in a frame header.
struct FrameRules {
  /// A connection the peer sends its messages on (an incoming one, or one this rank dialed
  /// back: kHelloDialBack) whose peer has not said bye yet.
  bool acceptsData = false;
  uint64_t slotBytes = 0;  ///< Largest data payload (the receive FIFO's slot size).
  int streams = 1;         ///< socketsPerPeer: lane L travels on stream L % streams.
  int stream = 0;          ///< This connection's stream.
  int rails = 1;           ///< Sockets of this connection (primary + rails) that may carry data.
};

/// The receiver's verdict on a frame header.
enum class FrameCheck {
  kOk,
  kBadMagic,        ///< Not the start of a frame: the byte stream is out of step or garbage.
  kUnknownKind,     ///< A kind this wire version does not define.
  kUnexpectedData,  ///< Data on a connection the peer does not send on, or after its bye.
  kTooLarge,        ///< More payload bytes than a slot holds.
  kWrongStream,     ///< The lane belongs to another stream of this peer.
  kBadControlSize,  ///< An abort notice outside 8..8+kMaxAbortCause bytes, or a heartbeat with
                    ///< a payload.
  kBadStripe,       ///< Rail shares in a control frame, on a rail the connection lacks, larger
                    ///< than the frame, or a nonzero reserved field.
};

/// Checks every field of a received header before any of it is used (a pure function: the
/// fuzzer calls it on arbitrary bytes). Only a kOk data header may size a read.
inline FrameCheck checkFrameHeader(const FrameHeader& header, const FrameRules& rules) {
  if (header.magic != kFrameMagic) return FrameCheck::kBadMagic;
  if (header.reserved != 0) return FrameCheck::kBadStripe;
  const bool striped = header.railTotal() != 0;
  if (striped && header.kind != static_cast<uint16_t>(FrameKind::kData) &&
      header.kind <= static_cast<uint16_t>(FrameKind::kHeartbeat)) {
    return FrameCheck::kBadStripe;
  }
  switch (static_cast<FrameKind>(header.kind)) {
    case FrameKind::kData:
      if (!rules.acceptsData) return FrameCheck::kUnexpectedData;
      if (header.bytes > rules.slotBytes) return FrameCheck::kTooLarge;
      if (rules.streams < 1 || header.lane % rules.streams != rules.stream) {
        return FrameCheck::kWrongStream;
      }
      if (header.railTotal() > header.bytes) return FrameCheck::kBadStripe;
      for (int rail = 1; rail < kMaxRails; ++rail) {
        if (header.railBytes[rail - 1] != 0 && rail >= rules.rails) return FrameCheck::kBadStripe;
      }
      return FrameCheck::kOk;
    case FrameKind::kAbort:
      if (header.bytes < kAbortNoticeMinBytes || header.bytes > kAbortNoticeMaxBytes) {
        return FrameCheck::kBadControlSize;
      }
      return FrameCheck::kOk;
    case FrameKind::kHeartbeat:
      return header.bytes == 0 ? FrameCheck::kOk : FrameCheck::kBadControlSize;
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
      return fmt::format("rank {} sent a frame of unknown kind {} (expected 0 to 3)", peer,
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
    case FrameCheck::kBadStripe:
      return fmt::format(
          "rank {} sent a frame (kind {}, {} bytes) with rail shares {}, {}, {} and reserved "
          "field {:#x} (expected shares only in data frames, at most the frame's bytes in all, "
          "none beyond this connection's {} socket(s), and a zero reserved field)",
          peer, header.kind, header.bytes, header.railBytes[0], header.railBytes[1],
          header.railBytes[2], header.reserved, rules.rails);
    case FrameCheck::kBadControlSize:
      return fmt::format(
          "rank {} sent a {} frame of {} bytes (expected {})", peer,
          header.kind == static_cast<uint16_t>(FrameKind::kAbort) ? "abort" : "heartbeat",
          header.bytes,
          header.kind == static_cast<uint16_t>(FrameKind::kAbort)
              ? fmt::format("{} to {}", kAbortNoticeMinBytes, kAbortNoticeMaxBytes)
              : std::string("0"));
  }
  return fmt::format("rank {} sent an acceptable frame header", peer);
}

/// The payload of an abort frame: the rank where the failure started (which may differ from
/// the sender, which forwards it), whether it is a usage error, and a short printable cause.
struct AbortNotice {
  uint32_t origin = 0;
  std::string cause;
  bool usageError = false;

  /// {u32 origin, u32 flags, cause}; the cause is cut to kMaxAbortCause bytes.
  std::string encode() const {
    size_t causeBytes = std::min(cause.size(), kMaxAbortCause);
    std::string out(8 + causeBytes, '\0');
    uint32_t flags = usageError ? kAbortUsageError : 0;
    std::memcpy(out.data(), &origin, 4);
    std::memcpy(out.data() + 4, &flags, 4);
    std::memcpy(out.data() + 8, cause.data(), causeBytes);
    return out;
  }
  /// Decodes `bytes` payload bytes received from a peer; false (and `*out` untouched) when
  /// the size is outside kAbortNoticeMinBytes..kAbortNoticeMaxBytes, the origin is not a
  /// rank below `ranks` or an undefined flag is set. Bytes of the cause outside printable
  /// ASCII become '?'.
  static bool decode(const unsigned char* in, size_t bytes, int ranks, AbortNotice* out) {
    if (bytes < kAbortNoticeMinBytes || bytes > kAbortNoticeMaxBytes || ranks < 1) return false;
    uint32_t origin = 0;
    uint32_t flags = 0;
    std::memcpy(&origin, in, 4);
    std::memcpy(&flags, in + 4, 4);
    if (origin >= static_cast<uint32_t>(ranks) || (flags & ~kAbortUsageError) != 0) return false;
    out->origin = origin;
    out->usageError = (flags & kAbortUsageError) != 0;
    out->cause.assign(reinterpret_cast<const char*>(in) + 8, bytes - 8);
    for (char& c : out->cause) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    return true;
  }
};

/// Hello::flags: the dialer, the higher rank of the pair, sends its messages of this stream
/// on the connection the acceptor opens to it, not on this one: the acceptor dials it back
/// (links_state.hpp, "one connection carries both directions").
inline constexpr uint16_t kHelloDialBack = 1;

/// First message of the connecting side: {u32 magic, u16 version, u16 stream, u32 src,
/// u32 dst, u64 slotBytes, u16 rail, u16 flags}. rail 0 opens the connection of
/// (src -> dst, stream); rail r > 0 adds the socket that carries rail r's pieces of it.
/// flags: kHelloDialBack or 0.
struct Hello {
  static constexpr size_t kBytes = 28;
  uint32_t magic = kHelloMagic;
  uint16_t version = kWireVersion;
  uint16_t stream = 0;
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t slotBytes = 0;
  uint16_t rail = 0;
  uint16_t flags = 0;

  void encode(unsigned char* out) const {
    std::memcpy(out, &magic, 4);
    std::memcpy(out + 4, &version, 2);
    std::memcpy(out + 6, &stream, 2);
    std::memcpy(out + 8, &src, 4);
    std::memcpy(out + 12, &dst, 4);
    std::memcpy(out + 16, &slotBytes, 8);
    std::memcpy(out + 24, &rail, 2);
    std::memcpy(out + 26, &flags, 2);
  }
  static Hello decode(const unsigned char* in) {
    Hello hello;
    std::memcpy(&hello.magic, in, 4);
    std::memcpy(&hello.version, in + 4, 2);
    std::memcpy(&hello.stream, in + 6, 2);
    std::memcpy(&hello.src, in + 8, 4);
    std::memcpy(&hello.dst, in + 12, 4);
    std::memcpy(&hello.slotBytes, in + 16, 8);
    std::memcpy(&hello.rail, in + 24, 2);
    std::memcpy(&hello.flags, in + 26, 2);
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
  kBadRail = 6,           ///< rail >= the acceptor's interface count, or unknown flags.
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
    case HelloStatus::kBadRail:
      return "rail beyond the listener's interfaces (GROVE_SOCKET_IFNAME)";
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
