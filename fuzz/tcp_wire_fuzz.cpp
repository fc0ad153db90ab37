// libFuzzer target for what a TCP transport peer sends before and between payloads: the
// authentication handshake (bootstrap::Handshake, server and client side), the Hello and its
// HelloAck, and the stream of frame headers (wire.hpp) with the abort notice's payload. The first
// byte picks the decoder and the receiver's settings, the rest is the peer's bytes. Every verdict
// is checked against the fields it judged, so a check that lets a bad field through is found, not
// only a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bootstrap/handshake.hpp"
#include "grove/error.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/wire.hpp"

namespace {

using grove::transport::tcp::checkFrameHeader;
using grove::transport::tcp::FrameCheck;
using grove::transport::tcp::FrameHeader;
using grove::transport::tcp::FrameKind;
using grove::transport::tcp::FrameRules;

void require(bool condition) {
  if (!condition) std::abort();
}

// A stream of frames as Connection::pumpRead consumes it: header, then `bytes` of payload.
void fuzzFrames(uint8_t settings, const uint8_t* data, size_t size) {
  FrameRules rules;
  rules.acceptsData = (settings & 1) != 0;
  rules.streams = 1 + ((settings >> 1) & 7);
  rules.stream = (settings >> 4) % rules.streams;
  rules.slotBytes = uint64_t{4096} << ((settings >> 6) & 3);
  rules.rails = 1 + ((settings >> 2) & 3);
  size_t at = 0;
  while (size - at >= FrameHeader::kBytes) {
    FrameHeader header = FrameHeader::decode(data + at);
    unsigned char again[FrameHeader::kBytes];
    header.encode(again);
    require(std::memcmp(again, data + at, FrameHeader::kBytes) == 0);
    at += FrameHeader::kBytes;
    FrameCheck check = checkFrameHeader(header, rules);
    if (check != FrameCheck::kOk) {
      require(!describeFrameProblem(check, header, rules, 3).empty());
      return;  // The connection breaks.
    }
    require(header.magic == grove::transport::tcp::kFrameMagic);
    switch (static_cast<FrameKind>(header.kind)) {
      case FrameKind::kData: {
        require(rules.acceptsData && header.bytes <= rules.slotBytes);
        require(header.lane % rules.streams == rules.stream);
        require(header.railTotal() <= header.bytes && header.reserved == 0);
        for (int rail = rules.rails; rail < grove::transport::tcp::kMaxRails; ++rail) {
          require(header.railBytes[rail - 1] == 0);
        }
        // The rails' pieces come on their own sockets; the primary carries the rest.
        size_t payload = static_cast<size_t>(header.bytes - header.railTotal());
        if (payload > size - at) return;  // Truncated: the peer's EOF breaks it.
        at += payload;
        break;
      }
      case FrameKind::kAbort: {  // The notice: origin and cause, decoded and checked.
        require(header.railTotal() == 0);
        size_t payload = static_cast<size_t>(header.bytes);
        require(payload >= grove::transport::tcp::kAbortNoticeMinBytes &&
                payload <= grove::transport::tcp::kAbortNoticeMaxBytes);
        if (payload > size - at) return;
        grove::transport::tcp::AbortNotice notice;
        int ranks = 1 + (settings & 15);
        if (grove::transport::tcp::AbortNotice::decode(data + at, payload, ranks, &notice)) {
          require(notice.origin < static_cast<uint32_t>(ranks));
          require(notice.cause.size() == payload - 8);
          for (char c : notice.cause) require(c >= 0x20 && c <= 0x7e);
          require(notice.encode().size() == payload);
        }
        return;
      }
      case FrameKind::kHeartbeat:
        require(header.bytes == 0);
        break;
      case FrameKind::kBye:
        rules.acceptsData = false;
        break;
      default:
        std::abort();  // checkFrameHeader accepted an unknown kind.
    }
  }
}

void fuzzHello(const uint8_t* data, size_t size) {
  using namespace grove::transport::tcp;
  unsigned char bytes[Hello::kBytes] = {};
  std::memcpy(bytes, data, std::min(size, Hello::kBytes));
  Hello hello = Hello::decode(bytes);
  unsigned char again[Hello::kBytes];
  hello.encode(again);
  require(std::memcmp(again, bytes, Hello::kBytes) == 0);
  HelloPolicy policy{1, {0, 2, 5}, 2, 262144, 2};
  HelloStatus status = checkHello(hello, policy);
  if (status == HelloStatus::kAccepted) {
    require(hello.version == kWireVersion && hello.dst == 1 && hello.stream < 2 &&
            hello.slotBytes == 262144 && hello.rail < 2 && (hello.flags & ~kHelloDialBack) == 0);
    require(hello.src == 0 || hello.src == 2 || hello.src == 5);
  }
  unsigned char ackBytes[HelloAck::kBytes] = {};
  if (size > Hello::kBytes) {
    std::memcpy(ackBytes, data + Hello::kBytes, std::min(size - Hello::kBytes, HelloAck::kBytes));
  }
  HelloAck ack = HelloAck::decode(ackBytes);
  require(describe(HelloStatus{ack.status}) != nullptr);
}

// The peer's side of the secret handshake, fed in the pieces the machine asks for.
void fuzzAuth(bool isServer, const uint8_t* data, size_t size) {
  grove::bootstrap::Handshake handshake("fuzz-secret", isServer, "fuzz", "the fuzzer");
  size_t at = 0;
  try {
    while (!handshake.done() && at < size) {
      size_t take = std::min(handshake.wanted(), size - at);
      require(take > 0);
      handshake.feed(reinterpret_cast<const char*>(data) + at, take);
      at += take;
    }
  } catch (const grove::Error& error) {
    require(error.code() == grove::ErrorCode::kInvalidUsage);
    return;
  }
  // Without the secret the fuzzer cannot forge the answer MAC (2^-256).
  require(!handshake.done());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint8_t settings = data[1];
  switch (data[0] % 4) {
    case 0:
      fuzzFrames(settings, data + 2, size - 2);
      break;
    case 1:
      fuzzHello(data + 1, size - 1);
      break;
    case 2:
      fuzzAuth(true, data + 1, size - 1);
      break;
    case 3:
      fuzzAuth(false, data + 1, size - 1);
      break;
  }
  return 0;
}
