// One TCP connection of the transport, as a non-blocking state machine driven by the network
// thread: an outgoing connection writes the committed slots of its lanes' send FIFOs as
// frames (header and payload in one sendmsg, straight from the slot) and releases them; an
// incoming one reads frame headers, acquires a slot of the lane's receive FIFO, reads the
// payload straight into it and commits it. Partial reads and writes resume where they
// stopped, so no byte is copied twice.
//
// Readiness is edge-triggered: epoll events set readable/writable, and the pumps clear them
// when the kernel says EAGAIN. A reader that waits for a free slot keeps `readable` and is
// resumed by the next pump after the rank releases a slot.
//
// Rails (rails.hpp): with several network interfaces, a connection has a further socket per
// interface, and its large data frames travel in pieces on all of them at once.
//
// Liveness: the connection remembers when it last wrote and read a byte; the network thread
// sends a heartbeat on one idle for a second and watches how long each peer stayed silent.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/socket.hpp"
#include "transport/fifo.hpp"
#include "transport/tcp/drain_rate.hpp"
#include "transport/tcp/rails.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport::tcp {

class Connection {
 public:
  enum class Direction { kOutgoing, kIncoming };
  enum class State {
    kOpen,
    kClosed,   ///< The peer said bye and closed: not a failure.
    kAborted,  ///< The peer sent an abort frame.
    kBroken,   ///< Reset, unexpected EOF or a protocol violation (see error()).
  };
  /// The receive FIFO of `lane` (created on first use), for incoming connections.
  using LaneLookup = std::function<Fifo*(uint16_t lane)>;

  using Clock = std::chrono::steady_clock;

  /// `ranks`: the communicator's size, to check the origin of an abort notice (0: the
  /// notice's origin is replaced by `peer`). `corruptFrame`: see corruptFrame_ (0 = off). `rails`:
  /// sockets it may have, the primary included (this rank's interfaces).
  Connection(net::UniqueFd socket, int peer, int stream, int streams, Direction direction,
             size_t slotBytes, LaneLookup lookup, int ranks = 0, uint64_t corruptFrame = 0,
             int rails = 1);

  int fd() const { return socket_.get(); }
  /// Adds the socket of rail `rail` (1..rails-1); false when out of range or already there.
  bool attachRail(int rail, net::UniqueFd socket) { return rails_.attach(rail, std::move(socket)); }
  /// The socket of `rail` (0: the primary), -1 when it is not attached.
  int fd(int rail) const { return rail == 0 ? fd() : rails_.attached(rail) ? rails_.fd(rail) : -1; }
  int railLimit() const { return rails_.limit(); }
  /// What each socket of an outgoing connection with rails carried (rails.hpp), for logs.
  std::string railSummary() const { return rails_.summary(); }
  int peer() const { return peer_; }
  int stream() const { return stream_; }
  Direction direction() const { return direction_; }
  State state() const { return state_; }
  /// Why the connection is not open, for logs.
  const std::string& error() const { return error_; }

  /// Adds a send FIFO whose frames go on this connection: an outgoing one's, or an incoming
  /// one's when it carries both directions (shared connections, links_state.hpp).
  void addSendLane(Fifo* fifo, uint16_t lane);
  /// Whether a send FIFO was added.
  bool hasSendLanes() const { return !lanes_.empty(); }
  /// Data frames from the peer are welcome (incoming connections from the start; an
  /// outgoing one once told: the peer may send on it, as shared connections do).
  void acceptData() { acceptsData_ = true; }
  bool acceptsData() const { return acceptsData_; }

  /// epoll's readiness of the socket of `rail` (0: the primary).
  void markReadable(int rail = 0) {
    rail == 0 ? void(readable_ = true) : rails_.markReadable(rail);
  }
  /// epoll reported the peer's end closed (EOF, reset or error): a short read no longer
  /// means the socket is empty, since the end of the stream raises no further edge.
  void markHangup(int rail = 0) { rail == 0 ? void(hangup_ = true) : rails_.markHangup(rail); }
  void markWritable(int rail = 0) {
    rail == 0 ? void(writable_ = true) : rails_.markWritable(rail);
  }

  /// Moves what it can without blocking; true when any byte or slot moved. A data frame of
  /// more than `maxFrameBytes` payload bytes is left where it is (not started, or not
  /// continued) and leftBulk() says so: the rank's thread moves small frames only.
  bool pumpWrite(size_t maxFrameBytes = SIZE_MAX);
  bool pumpRead(size_t maxFrameBytes = SIZE_MAX);
  /// The last pump stopped at a frame above its limit.
  bool leftBulk() const { return leftBulk_; }

  /// Queues a control frame (abort with its encoded AbortNotice as `payload`, or bye), sent
  /// after the frame in flight; no data frame follows it.
  void sendControl(FrameKind kind, std::string payload = {});
  /// Queues a heartbeat frame (unless a control frame is queued or the peer said bye).
  void sendHeartbeat();
  /// When a byte was last written / read on this connection (construction counts as both).
  Clock::time_point lastSend() const { return lastSend_; }
  /// How fast the primary socket's path delivers this rank's sends: the median of the
  /// kernel's recent samples not application-limited (drain_rate.hpp), bytes/s; 0 before.
  const DrainRate& drainRate() const { return drain_; }
  Clock::time_point lastReceive() const { return lastReceive_; }
  /// A data frame from the peer waits for this rank to free a receive slot: the peer is not
  /// what anyone waits on, and its heartbeats queue behind that frame.
  bool waitingForSlot() const { return rxState_ == ReadState::kSlot && !discard_; }
  /// The notice of the abort frame that ended this connection (state kAborted).
  const AbortNotice& abortNotice() const { return notice_; }
  /// True once the queued control frame is fully written (or nothing more can be written).
  bool controlFlushed() const { return sealed_ || !sendError_.empty() || state_ != State::kOpen; }
  /// After the control frame: half-closes the socket (once), so that the peer reads EOF
  /// right after the bye and closes its end, and nothing this rank sent is lost to a reset.
  void finishWriting();
  /// Bytes written to the socket that the peer's host has not acknowledged yet.
  size_t unacknowledgedBytes() const;
  /// Incoming data is read and dropped instead of waiting for receive slots (on shutdown,
  /// so that a peer flushing to this rank is not stuck).
  void discardIncomingData() { discard_ = true; }
  /// Whether a data frame is in flight or a lane FIFO holds a committed message.
  bool hasUnsentData();

 private:
  struct SendLane {
    Fifo* fifo;
    uint16_t lane;
  };
  enum class ReadState { kHeader, kSlot, kPayload };

  /// Starts the next frame: a queued control frame, a heartbeat, or the next committed slot
  /// of the lanes (round robin) unless its payload exceeds `maxFrameBytes`.
  bool startNextFrame(size_t maxFrameBytes);
  /// After a frame: reads the kernel's delivery rate when drain_ says one is due.
  void sampleDrain();
  void finishFrame();
  bool onHeader();
  void onAbortNotice();
  void fail(State state, std::string error);
  /// Writing failed with data still to send: ends the connection (after reading the
  /// peer's last frames).
  void failSending();
  /// A write on the primary or a rail failed for `why`.
  void onSendError(const std::string& why);
  /// EOF or a read error: closed after the peer's bye, else broken.
  void endOfStream(std::string unexpected);

  net::UniqueFd socket_;
  int peer_;
  int stream_;
  int streams_;
  Direction direction_;
  size_t slotBytes_;
  LaneLookup lookup_;
  int ranks_;
  State state_ = State::kOpen;
  std::string error_;
  bool readable_ = false;
  bool writable_ = false;
  bool leftBulk_ = false;
  bool hangup_ = false;

  // Writer: the frame in flight (header + payload of one slot, or a control frame).
  std::vector<SendLane> lanes_;
  size_t nextLane_ = 0;
  Fifo* txFifo_ = nullptr;  ///< Fifo whose slot is in flight (nullptr: control frame).
  unsigned char txHeader_[FrameHeader::kBytes] = {};
  const char* txPayload_ = nullptr;
  size_t txBytes_ = 0;         ///< Payload bytes of the frame in flight.
  size_t txPrimaryBytes_ = 0;  ///< The part of them the primary socket carries.
  size_t txDone_ = 0;          ///< Bytes of header + primary payload written.
  bool txActive_ = false;
  bool controlQueued_ = false;
  FrameKind control_ = FrameKind::kBye;
  std::string controlPayload_;
  bool heartbeatQueued_ = false;
  bool txHeartbeat_ = false;  ///< The frame in flight is a heartbeat (it does not seal).
  bool sealed_ = false;       ///< The control frame is out; nothing more is written.
  bool halfClosed_ = false;   ///< finishWriting shut the write side down.
  /// Why writing failed (the peer reset the connection); the read side then decides how
  /// the connection ends, since what the peer sent before the reset is still readable.
  std::string sendError_;
  Clock::time_point lastSend_ = Clock::now();
  DrainRate drain_;
  Clock::time_point lastReceive_ = Clock::now();

  // Reader: a header, then a slot for its payload; either may come partly from the stage.
  ReadState rxState_ = ReadState::kHeader;
  unsigned char rxHeader_[FrameHeader::kBytes] = {};
  size_t rxHeaderDone_ = 0;
  /// Bytes read ahead of the part of a frame a read asked for (the next header, a small
  /// payload, whole small frames), consumed before the socket is read again.
  std::vector<char> rxStage_;
  size_t stageBegin_ = 0;
  size_t stageEnd_ = 0;
  FrameHeader rx_;
  uint64_t rxPrimaryBytes_ = 0;  ///< The part of rx_.bytes that comes on the primary socket.
  Fifo* rxFifo_ = nullptr;
  char* rxSlot_ = nullptr;  ///< nullptr while discarding.
  bool rxNotice_ = false;   ///< The payload being read is an abort notice (into rxNoticeBytes_).
  unsigned char rxNoticeBytes_[kAbortNoticeMaxBytes] = {};
  AbortNotice notice_;
  size_t rxDone_ = 0;
  bool byeReceived_ = false;
  bool discard_ = false;
  std::vector<Fifo*> rxLanes_;  ///< Cache of lookup_ by lane.
  /// Tests (GROVE_FAULT_CORRUPT_FRAME=N): flip one bit of the N-th non-empty data frame read
  /// on this connection, standing for corruption on the wire that TCP's own checksum missed
  /// (what GROVE_CHECKSUM must catch). 0: off.
  uint64_t corruptFrame_ = 0;
  uint64_t dataFramesRead_ = 0;
  bool acceptsData_ = false;  ///< See acceptData().
  std::vector<char> discardBuffer_;
  Rails rails_;
};

}  // namespace grove::transport::tcp
