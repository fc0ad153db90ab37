// libFuzzer target for the TCP transport's real reader: Connection::pumpRead on a socket pair,
// fed a peer's byte stream in fuzzer-chosen pieces, so that the partial reads and the
// read-ahead of the next header behind a payload are exercised too. An oracle parses the
// same bytes frame by frame with checkFrameHeader and says which messages each lane must
// receive; the connection must deliver exactly those, and must not stay open at EOF. With a
// rail (a third leading byte, nonzero), the tail of the input is a second socket's stream:
// the pieces data frames give rail 1 (FrameHeader::railBytes) are read from it.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"
#include "transport/tcp/connection.hpp"
#include "transport/tcp/wire.hpp"

namespace {

using namespace grove::transport;
using namespace grove::transport::tcp;

void require(bool condition) {
  if (!condition) std::abort();
}

struct Free {
  void operator()(void* memory) const { std::free(memory); }
};

struct Lane {
  std::unique_ptr<void, Free> raw;
  std::unique_ptr<Fifo> fifo;
  std::vector<std::string> received;
};

// The messages per lane a correct reader delivers for `stream`, given the primary's bytes
// `data` and rail 1's bytes `rail`.
std::map<uint16_t, std::vector<std::string>> expected(const uint8_t* data, size_t size,
                                                      const uint8_t* rail, size_t railSize,
                                                      FrameRules rules) {
  std::map<uint16_t, std::vector<std::string>> out;
  size_t at = 0;
  size_t railAt = 0;
  while (size - at >= FrameHeader::kBytes) {
    FrameHeader header = FrameHeader::decode(data + at);
    at += FrameHeader::kBytes;
    if (checkFrameHeader(header, rules) != FrameCheck::kOk) break;
    auto kind = static_cast<FrameKind>(header.kind);
    if (kind == FrameKind::kAbort) break;
    if (kind == FrameKind::kHeartbeat) continue;
    if (kind == FrameKind::kBye) {
      rules.acceptsData = false;
      continue;
    }
    const uint64_t onRail = header.railBytes[0];
    const uint64_t onPrimary = header.bytes - header.railTotal();
    if (onPrimary > size - at || onRail > railSize - railAt) break;
    std::string message(reinterpret_cast<const char*>(data + at), onPrimary);
    message.append(reinterpret_cast<const char*>(rail + railAt), onRail);
    out[header.lane].push_back(std::move(message));
    at += onPrimary;
    railAt += onRail;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t settings = data[0];
  const size_t piece = 1 + data[1] % 40;  // Bytes written per step: splits headers too.
  const uint8_t railShare = data[2];      // 0: no rail; else the rail's part of the input.
  data += 3;
  size -= 3;
  const int rails = railShare == 0 ? 1 : 2;
  const size_t railSize = railShare == 0 ? 0 : size * railShare / 512;
  const uint8_t* rail = data + (size - railSize);
  size -= railSize;
  const size_t slotBytes = size_t{16} << (settings & 3);
  const uint32_t depth = 1 + ((settings >> 2) & 1);
  const int streams = 1 + ((settings >> 3) & 3);
  const int stream = (settings >> 5) % streams;

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  int railFds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, railFds) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 0;
  }
  Doorbell netBell, rankBell;
  std::map<uint16_t, Lane> lanes;
  auto lookup = [&](uint16_t lane) -> Fifo* {
    Lane& l = lanes[lane];
    if (!l.fifo) {
      size_t bytes = Fifo::memoryBytes(slotBytes, depth);
      bytes = (bytes + 63) / 64 * 64;
      l.raw.reset(std::aligned_alloc(64, bytes));
      std::memset(l.raw.get(), 0, bytes);
      l.fifo = std::make_unique<Fifo>(l.raw.get(), slotBytes, depth, &netBell, &rankBell);
    }
    return l.fifo.get();
  };
  Connection connection(grove::net::UniqueFd(fds[0]), 3, stream, streams,
                        Connection::Direction::kIncoming, slotBytes, lookup, 0, 0, rails);
  grove::net::UniqueFd railEnd(railFds[0]);
  if (rails == 2) require(connection.attachRail(1, std::move(railEnd)));
  auto pump = [&] {
    for (int rounds = 0; rounds < 100000; ++rounds) {
      connection.markReadable();
      if (rails == 2) connection.markReadable(1);
      bool moved = connection.pumpRead();
      for (auto& [id, lane] : lanes) {
        size_t bytes = 0;
        while (const void* slot = lane.fifo->tryPeek(&bytes)) {
          require(bytes <= slotBytes);
          lane.received.emplace_back(static_cast<const char*>(slot), bytes);
          lane.fifo->release();
          moved = true;
        }
      }
      if (!moved) return;
    }
    std::abort();  // The reader never settles.
  };
  // What reached each socket: a write can fail once a socket's buffer is full of bytes the
  // reader has no reason to read (a rail's bytes past the last piece a header announced,
  // sent one byte per write), and the model then judges only what was sent.
  size_t sent = 0;
  size_t railSent = 0;
  for (size_t at = 0; at < std::max(size, railSize); at += piece) {
    if (at < size) {
      size_t n = std::min(piece, size - at);
      const ssize_t wrote = ::write(fds[1], data + at, n);
      if (wrote > 0) sent += static_cast<size_t>(wrote);
      if (wrote != static_cast<ssize_t>(n)) break;
    }
    if (at < railSize) {
      size_t n = std::min(piece, railSize - at);
      const ssize_t wrote = ::write(railFds[1], rail + at, n);
      if (wrote > 0) railSent += static_cast<size_t>(wrote);
      if (wrote != static_cast<ssize_t>(n)) break;
    }
    pump();
  }
  ::close(railFds[1]);
  ::close(fds[1]);
  pump();
  require(connection.state() != Connection::State::kOpen);
  require(!connection.error().empty());

  FrameRules rules{true, slotBytes, streams, stream, rails};
  auto want = expected(data, sent, rail, railSent, rules);
  for (auto& [id, lane] : lanes) {
    require(want[id] == lane.received);
  }
  for (auto& [id, messages] : want) {
    require(messages.empty() || lanes.count(id) != 0);
  }
  return 0;
}
