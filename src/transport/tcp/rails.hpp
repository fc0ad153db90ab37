// Rails: the further sockets of one TCP connection, one per further network interface, that
// carry pieces of its large data frames, so one connection drives every NIC of a host (as
// NCCL spreads a channel's traffic over several NICs).
//
// The primary socket (rail 0) carries every frame header, every control frame and the first
// piece of each data frame; a data frame of at least kStripeMinBytes is cut into one piece
// per attached rail, in proportion to the rate each socket was measured to drain at, and the
// header says how many bytes each rail carries (FrameHeader::railBytes). The pieces follow on
// the rails' sockets in frame order, without headers of their own: the receiver knows their
// sizes from the header it read on the primary, so a rail's byte stream is the concatenation
// of its pieces and never needs framing or reordering. A frame is released (sender) or
// committed (receiver) when every piece of it moved.
//
// The shares follow what each socket can carry, learned from the sender's own sockets: the
// receiver commits a frame when its last piece arrived, so the link given more than its share
// falls behind, and what it is behind shows at the sender. Two signs say which socket lags:
// before each striped frame, the bytes each socket holds unacknowledged (SIOCOUTQ) over its
// weight (the one with the most, by more than kBacklogSlack, is behind: the usual case, since
// a collective's pipeline keeps the buffers from filling), and after it, how long each piece waited
// for buffer space (the one that waited longest, by more than kLagSlack: when the buffers do fill).
// The lagging socket then gives kWeightStep of its weight to the leading one: a slower link ends up
// with a proportionally smaller share, equal links with equal ones, and while no socket lags (the
// links outrun the CPU) nothing changes. (A piece's bytes over its write time would not do: the
// socket given more bytes looks faster, since its fixed backlog counts for less, and the split runs
// away to one side.) No socket's weight falls below 1/kMinShareDivisor of the largest, so a link
// that became faster is seen again.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/socket.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport::tcp {

/// Data frames with fewer payload bytes travel whole on the primary socket: a piece costs a
/// syscall on each side, worth it only when the bytes take longer on the wire.
inline constexpr size_t kStripeMinBytes = 64 << 10;
/// Rails' pieces are multiples of this many bytes (the primary's piece takes the rest).
inline constexpr size_t kStripeGrain = 4 << 10;

/// The shares of rails 1..kMaxRails-1 of a data frame of `bytes` bytes, in proportion to
/// `weights` (index 0: the primary; a weight of 0: the socket is absent and gets nothing);
/// each share is rounded down to kStripeGrain, the primary carries the rest. All zero below
/// kStripeMinBytes or when only the primary has weight. A pure function.
std::array<uint32_t, kMaxRails - 1> splitFrame(uint64_t bytes,
                                               const std::array<double, kMaxRails>& weights);

/// The rails of one connection and the pieces of its frame in flight.
class Rails {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kLagSlack{50};
  static constexpr int64_t kBacklogSlack = 64 << 10;
  static constexpr double kWeightStep = 0.04;
  static constexpr double kMinShareDivisor = 16;

  /// `limit`: sockets the connection may have, the primary included (1..kMaxRails).
  explicit Rails(int limit);

  int limit() const { return limit_; }
  /// Adds rail `rail` (1..limit-1); false when it is out of range or already attached.
  bool attach(int rail, net::UniqueFd socket);
  bool attached(int rail) const { return rails_[rail].socket.valid(); }
  int fd(int rail) const { return rails_[rail].socket.get(); }
  void markReadable(int rail) { rails_[rail].readable = true; }
  void markWritable(int rail) { rails_[rail].writable = true; }
  void markHangup(int rail) { rails_[rail].hangup = true; }

  // --- Sending side (outgoing connections)
  /// Plans a data frame of `bytes` payload bytes at `payload`: fills `railBytes` (the
  /// header's shares) and sets up the rails' pieces; returns the primary's share.
  /// `primaryFd`: the primary socket (for its backlog).
  uint64_t planSend(const char* payload, uint64_t bytes, uint32_t* railBytes, int primaryFd);
  /// Writes what the rails can take without blocking; bytes moved. On a failed write,
  /// `*error` says why ("rail R: reason"; nothing more is written).
  size_t pumpWrites(std::string* error);
  bool writesDone() const;
  /// The primary socket's buffer filled during its piece of the striped frame in flight
  /// (planSend returned less than the frame's bytes) / it wrote the piece's last byte.
  void primaryBlocked() { blocked(0); }
  void primaryDone() { pieceDone(0); }
  /// Socket `rail`'s weight relative to the largest (1), for tests and logs.
  double weight(int rail) const { return rails_[rail].weight; }
  /// Bytes each socket carried of striped frames and its weight, for the log.
  std::string summary() const;
  /// Half-closes every rail (after the connection's bye).
  void shutdownWrites();
  /// Bytes the rails wrote that the peer's host has not acknowledged yet.
  size_t unacknowledgedBytes() const;

  // --- Receiving side (incoming connections)
  /// Sets up the pieces the frame whose header says `railBytes` brings, after the primary's
  /// `primaryBytes`; false when a piece needs a rail that cannot come (ended).
  bool planReceive(const uint32_t* railBytes, uint64_t primaryBytes);
  /// Reads the pieces into `slot` (the frame's receive slot; nullptr: read and drop into
  /// `discard`, of `discardBytes`); bytes moved. `*error` says why a rail ended early
  /// ("rail R: reason").
  size_t pumpReads(char* slot, char* discard, size_t discardBytes, std::string* error);
  bool readsDone() const;

 private:
  struct Rail {
    net::UniqueFd socket;
    bool readable = false;
    bool writable = false;
    bool hangup = false;
    bool ended = false;   ///< EOF read: nothing more arrives on it.
    uint64_t offset = 0;  ///< The piece of the frame in flight: where it starts in the payload,
    uint64_t bytes = 0;   ///< how long it is,
    uint64_t done = 0;    ///< and how much of it moved.
    const char* source = nullptr;  ///< Sending: the payload.
    double weight = 1;             ///< Relative share (the largest is 1).
    uint64_t total = 0;            ///< Bytes of striped frames it carried.
    /// When its buffer first filled during the piece in flight (epoch: it did not), and how
    /// long the piece waited for it.
    Clock::time_point blockedSince{};
    Clock::duration waited{};
  };
  void blocked(int rail);
  /// Before a striped frame: the socket holding the most unacknowledged bytes per weight (by
  /// more than kBacklogSlack) gives weight to the one holding the fewest.
  void balanceBacklogs(int primaryFd);
  /// Moves kWeightStep of weight from socket `from` to socket `to`.
  void shift(int from, int to);
  /// Socket `rail` finished its piece: notes how long it waited, rebalances once all did.
  void pieceDone(int rail);
  std::array<double, kMaxRails> weights() const;

  int limit_;
  std::array<Rail, kMaxRails> rails_;  ///< [0]: the primary's weight and counters only.
  int piecesLeft_ = 0;  ///< Pieces of the striped frame in flight not written yet (primary's too).
};

}  // namespace grove::transport::tcp
