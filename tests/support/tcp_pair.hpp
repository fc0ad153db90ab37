// Helpers for tests that drive the TCP transport's TcpLinks on loopback: ranks as objects of
// one process that meet through a file store, and a hand-made peer that completes the real
// handshake and then writes whatever bytes a test wants (truncated or malformed frames).
//
// Why a header of its own: every TcpLinks test (tcp_test, tcp_frames_test, failure_info_test,
// tcp_link_addresses_test under tests/unit) needs the same few pieces — ranks, their options,
// the doorbell wait, an exchange of checked messages — and building frames must go through
// FrameHeader (its size and layout belong to the wire format, not to the tests), so they are
// written once here. A test that needs other options changes the TcpOptions makeOptions()
// returns before it makes the Rank.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/file_store.hpp"
#include "common/socket.hpp"
#include "transport/doorbell.hpp"
#include "transport/fifo.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/tcp_links.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport::tcp_pair {

using Clock = std::chrono::steady_clock;

/// Liveness bound of every wait (never a timing assertion: only "it did happen").
inline constexpr auto kPatience = std::chrono::seconds(60);
/// The secret of every rank made by makeOptions() (unless it is given another).
inline constexpr std::string_view kSecret = "s3cret";

/// A fresh directory under /tmp, removed with everything in it.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/grove-tcp-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    path = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

/// Options of rank `rank` of `size`, every other rank reached over TCP on loopback with
/// `sockets` connections per peer, FIFOs of 4 slots of `slotBytes`, the job secret `secret`
/// and an operation timeout of 30 s.
inline TcpOptions makeOptions(int rank, int size, int sockets, size_t slotBytes = 4096,
                              std::string secret = std::string(kSecret)) {
  TcpOptions options;
  options.keyPrefix = "job";
  options.rank = rank;
  options.size = size;
  for (int r = 0; r < size; ++r) {
    if (r != rank) options.remoteRanks.push_back(r);
  }
  options.geometry = FifoGeometry{slotBytes, 4};
  options.socketsPerPeer = sockets;
  options.interfaces = "lo";
  options.secret = std::move(secret);
  options.timeout = std::chrono::milliseconds(30'000);
  return options;
}

/// One rank: its doorbell, store and links.
struct Rank {
  Rank(const std::string& dir, TcpOptions options)
      : store(dir), links(store, std::move(options), bell) {}
  Doorbell bell;
  bootstrap::FileStore store;
  TcpLinks links;
};

/// Sleeps on `bell` for at most a millisecond (the doorbell protocol, as the executor does).
inline void nap(Doorbell& bell) {
  uint32_t sequence = prepareSleep(bell);
  sleep(bell, sequence, std::chrono::milliseconds(1));
  cancelSleep(bell);
}

/// Waits until `rank.links.failedPeer()` is not -1 (or kPatience passed); returns it.
inline int awaitFailure(Rank& rank) {
  Clock::time_point deadline = Clock::now() + kPatience;
  while (rank.links.failedPeer() < 0 && Clock::now() < deadline) nap(rank.bell);
  return rank.links.failedPeer();
}

/// Waits for the next message on `inbox` as a rank waiting on that lane does, also watching
/// failedPeer(): the peer reported failed, or -1 when a message arrived first, or -2 when
/// neither happened within kPatience.
inline int waitOnLane(Rank& rank, Fifo& inbox) {
  Clock::time_point deadline = Clock::now() + kPatience;
  for (;;) {
    size_t bytes = 0;
    if (inbox.tryPeek(&bytes) != nullptr) return -1;
    int failed = rank.links.failedPeer();
    if (failed >= 0) return failed;
    if (Clock::now() > deadline) return -2;
    nap(rank.bell);
  }
}

/// A deterministic payload byte: message `index` from `src` on `lane`, position `at`.
inline unsigned char patternByte(int src, int lane, int index, size_t at) {
  return static_cast<unsigned char>(src * 131 + lane * 31 + index * 7 + at * 13 + (at >> 9));
}

/// `bytes` bytes of patternByte(src, lane, index, 0..).
inline std::string pattern(int src, int lane, int index, size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t at = 0; at < bytes; ++at)
    out[at] = static_cast<char>(patternByte(src, lane, index, at));
  return out;
}

/// The encoded header of a data frame of `bytes` payload bytes on `lane` (untagged).
inline std::string dataHeader(int lane, uint64_t bytes) {
  tcp::FrameHeader header;
  header.kind = static_cast<uint16_t>(tcp::FrameKind::kData);
  header.lane = static_cast<uint16_t>(lane);
  header.bytes = bytes;
  std::string out(tcp::FrameHeader::kBytes, '\0');
  header.encode(reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

/// Connects to `target`'s listener as rank `src` on `stream` (authenticated with kSecret,
/// hello accepted): the caller then speaks frames on it by hand. Throws on refusal.
inline net::UniqueFd connectAs(const Rank& target, int src, int dst, size_t slotBytes,
                               int stream = 0) {
  tcp::Hello hello;
  hello.src = static_cast<uint32_t>(src);
  hello.dst = static_cast<uint32_t>(dst);
  hello.stream = static_cast<uint16_t>(stream);
  hello.slotBytes = slotBytes;
  return tcp::openConnection(target.links.address(), hello, kSecret, Clock::now() + kPatience,
                             nullptr, [](int) {});
}

/// Writes all of `bytes` to `socket` (blocking, bounded by kPatience).
inline void sendRaw(const net::UniqueFd& socket, const std::string& bytes) {
  net::writeExact(socket.get(), bytes.data(), bytes.size(), Clock::now() + kPatience,
                  "test frames");
}

/// Sends `messages` messages of patterned bytes (sizes cycling through 0, 1, slot - 1, slot,
/// 7 and others) to `peer` on each of `lanes` and receives as many from it, checking every
/// byte; "" on success, else what went wrong. Stops early only if `peer` itself is reported
/// failed (failures of other peers are not this exchange's business).
///
/// `rank` is a Rank, or anything with the same `bell` and `links` (a test's own store).
/// `drive`: wait as a rank does with the latency path — TcpLinks::progress() between polls,
/// handOffProgress() before each nap — rather than leaving every byte to the network thread.
template <class RankLike = Rank>
std::string exchange(RankLike& rank, int self, int peer, const std::vector<int>& lanes,
                     int messages, size_t slotBytes, bool drive = false) {
  auto sizeOf = [slotBytes](int index) -> size_t {
    const size_t sizes[] = {0, 1, slotBytes - 1, slotBytes, 7};
    return index % 6 < 5 ? sizes[index % 6] : (static_cast<size_t>(index) * 977) % slotBytes;
  };
  std::vector<int> sent(lanes.size(), 0);
  std::vector<int> received(lanes.size(), 0);
  Clock::time_point deadline = Clock::now() + kPatience;
  for (;;) {
    bool done = true;
    bool progress = false;
    for (size_t i = 0; i < lanes.size(); ++i) {
      const int lane = lanes[i];
      if (sent[i] < messages) {
        done = false;
        Fifo& fifo = rank.links.sendFifo(peer, lane);
        if (void* slot = fifo.tryAcquire()) {
          std::string bytes = pattern(self, lane, sent[i], sizeOf(sent[i]));
          std::memcpy(slot, bytes.data(), bytes.size());
          fifo.commit(bytes.size());
          ++sent[i];
          progress = true;
        }
      }
      if (received[i] < messages) {
        done = false;
        Fifo& fifo = rank.links.recvFifo(peer, lane);
        size_t bytes = 0;
        if (const void* slot = fifo.tryPeek(&bytes)) {
          std::string expected = pattern(peer, lane, received[i], sizeOf(received[i]));
          if (bytes != expected.size() || std::memcmp(slot, expected.data(), bytes) != 0) {
            return "lane " + std::to_string(lane) + " message " + std::to_string(received[i]) +
                   ": " + std::to_string(bytes) + " bytes, not the " +
                   std::to_string(expected.size()) + " expected bytes";
          }
          fifo.release();
          ++received[i];
          progress = true;
        }
      }
    }
    if (done) return "";
    if (rank.links.failedPeer() == peer) {
      return "rank " + std::to_string(peer) + " failed: " + rank.links.failure().cause;
    }
    if (Clock::now() > deadline) return "no progress";
    if (drive && rank.links.progress()) continue;
    if (!progress) {
      if (drive) rank.links.handOffProgress();
      nap(rank.bell);
    }
  }
}

}  // namespace grove::transport::tcp_pair
