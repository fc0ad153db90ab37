#include "exec/direct.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <utility>

#include "exec/message_tag.hpp"
#include "exec/reduce.hpp"

namespace grove::exec {
namespace {

using plan::Collective;

// How long a call waits for the failure machinery to explain an unreadable peer buffer
// before it fails with the read error itself. A failure reaches every rank in about 0.1 s,
// but took up to 2.0 s with two ASan fault tests sharing 2 CPUs (2 s of grace then named
// the unreadable buffer instead of the dead rank).
constexpr std::chrono::seconds kUnreadableGrace{10};

// Message kinds (the first byte of every message of the protocol).
constexpr uint8_t kHello = 1;
constexpr uint8_t kReduced = 2;
constexpr uint8_t kDone = 3;

// Hello::flags.
constexpr uint32_t kReadsAllPeers = 1;  // The sender can read every peer's memory.
constexpr uint32_t kAllowsCopies = 2;   // The sender runs direct over kernel copies too.

struct Hello {
  uint32_t kind = kHello;
  uint32_t flags = 0;
  transport::BufferDescriptor input;
  transport::BufferDescriptor output;
};

// Reductions go tile by tile so that the tile being accumulated stays in cache while every
// rank's operand is added to it. Ordinary peer memory arrives through staging tiles, larger
// ones because each costs a system call.
constexpr size_t kMappedTileBytes = 64 * 1024;
constexpr size_t kCopiedTileBytes = 256 * 1024;
constexpr int kStagingTiles = 3;  // two operands of the first combine, and the own input
// Allreduce goes in rounds of this many bytes of share per rank: a peer copies a share while
// it is still in the cache of the rank that just reduced it, instead of from memory.
constexpr size_t kRoundShareBytes = 512 * 1024;

}  // namespace

bool directSupports(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kReduceScatter ||
         collective == Collective::kAllGather || collective == Collective::kBroadcast;
}

size_t DirectExecution::stagingBytes() { return kStagingTiles * kCopiedTileBytes; }

void DirectExecution::start(const DirectCall& call, transport::Transport& transport) {
  call_ = call;
  call_.tag.algorithm = algorithmTag(kDirectAlgorithm);
  memory_ = transport.peerMemory();
  transport_ = &transport;
  elementBytes_ = dataTypeSize(call.type);
  peers_.assign(static_cast<size_t>(call.nranks), Peer{});
  for (int q = 0; q < call.nranks; ++q) {
    if (q == call.rank) continue;
    peers_[q].send = &transport.sendFifo(q, 0);
    peers_[q].recv = &transport.recvFifo(q, 0);
  }
  phase_ = Phase::kHello;
  rounds_ = 0;
  if (call.collective == Collective::kAllReduce) {
    roundElems_ = std::max<size_t>(1, kRoundShareBytes / elementBytes_) * call.nranks;
    rounds_ = static_cast<uint32_t>((call.count + roundElems_ - 1) / roundElems_);
  }
  round_ = 0;
  roundReduced_ = false;
  declined_ = false;
  declineReason_ = {};
  copiedPeers_ = 0;
  unreadableSince_.reset();
  waitingFor_ = -1;
  error_.clear();
  errorCode_ = ErrorCode::kInvalidUsage;
}

void DirectExecution::fail(ErrorCode code, std::string message) {
  errorCode_ = code;
  error_ = std::move(message);
}

bool DirectExecution::sendToAll(uint32_t message) {
  bool all = true;
  for (int q = 0; q < call_.nranks; ++q) {
    if (q == call_.rank || peers_[q].sent > message) continue;
    Peer& peer = peers_[q];
    void* slot = peer.send->tryAcquire();
    if (slot == nullptr) {
      all = false;
      continue;
    }
    size_t bytes = 1;
    if (message == 0) {
      Hello hello;
      hello.flags = (memory_ != nullptr && memory_->canReadAllPeers() ? kReadsAllPeers : 0) |
                    (call_.allowCopies ? kAllowsCopies : 0);
      hello.input = call_.inputDescriptor;
      hello.output = call_.outputDescriptor;
      std::memcpy(slot, &hello, sizeof hello);
      bytes = sizeof hello;
    } else {
      *static_cast<uint8_t*>(slot) = message <= rounds_ ? kReduced : kDone;
    }
    peer.send->commit(bytes, call_.tag);
    ++peer.sent;
  }
  return all;
}

bool DirectExecution::receive(int q) {
  Peer& peer = peers_[q];
  size_t bytes = 0;
  const transport::MessageTag* tag = nullptr;
  const void* data = peer.recv->tryPeek(&bytes, &tag);
  if (data == nullptr) {
    waitingFor_ = q;
    return false;
  }
  if (Status received = checkReceived(call_.tag, *tag, data, bytes, q, 0); !received.ok()) {
    fail(received.code(), received.message());
    return false;
  }
  const uint8_t expected = peer.received == 0         ? kHello
                           : peer.received <= rounds_ ? kReduced
                                                      : kDone;
  const uint8_t kind = bytes > 0 ? *static_cast<const uint8_t*>(data) : 0;
  if (kind != expected || bytes != (expected == kHello ? sizeof(Hello) : 1)) {
    fail(ErrorCode::kInvalidUsage,
         fmt::format("direct: message {} from rank {} is {} bytes of kind {} (expected kind {})",
                     peer.received, q, bytes, kind, expected));
    return false;
  }
  if (expected == kHello) {
    Hello hello;
    std::memcpy(&hello, data, sizeof hello);
    peer.input = hello.input;
    peer.output = hello.output;
    peer.flags = hello.flags;
  }
  peer.recv->release();
  ++peer.received;
  return true;
}

bool DirectExecution::receiveHellos() {
  bool all = true;
  for (int q = 0; q < call_.nranks; ++q) {
    if (q == call_.rank || peers_[q].received > 0) continue;
    if (!receive(q)) {
      if (!error_.empty()) return false;
      all = false;
    }
  }
  return all;
}

const char* DirectExecution::resolve(int q, const transport::BufferDescriptor& buffer,
                                     size_t needed) {
  if (needed == 0) return nullptr;
  if (buffer.address == 0 || buffer.bytes < needed) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("direct: rank {} described a buffer of {} bytes at {:#x}; this call "
                            "reads {} bytes of it",
                            q, buffer.bytes, buffer.address, needed));
  }
  return memory_->map(q, buffer);
}

void DirectExecution::resolvePeers() {
  // Every rank saw the same hellos (its own flags and buffers included), so all decline or
  // none: when a rank cannot read its peers, or when some buffer read by a peer would have to
  // be copied by the kernel and not every rank allows that (GROVE_DIRECT=2).
  bool everyoneReads = memory_ != nullptr && memory_->canReadAllPeers();
  bool everyoneCopies = call_.allowCopies;
  bool allRegistered = true;  // Every buffer some rank reads comes from grove::allocate.
  copiedPeers_ = 0;
  for (int q = 0; q < call_.nranks; ++q) {
    const bool self = q == call_.rank;
    const uint32_t flags = self ? 0 : peers_[q].flags;
    if (!self && (flags & kReadsAllPeers) == 0) everyoneReads = false;
    if (!self && (flags & kAllowsCopies) == 0) everyoneCopies = false;
    const transport::BufferDescriptor& input = self ? call_.inputDescriptor : peers_[q].input;
    const transport::BufferDescriptor& output = self ? call_.outputDescriptor : peers_[q].output;
    const bool inputRead = call_.collective != Collective::kBroadcast || q == call_.root;
    const bool outputRead = call_.collective == Collective::kAllReduce;
    if ((inputRead && input.region == 0) || (outputRead && output.region == 0)) {
      allRegistered = false;
    }
  }
  const bool allMapped = allRegistered || (memory_ != nullptr && memory_->mapsAnyMemory());
  if (!everyoneReads || !(allMapped || everyoneCopies)) {
    declined_ = true;
    declineReason_ = !everyoneReads ? "a rank cannot read its peers' memory"
                                    : "a buffer that a peer reads is ordinary memory of another "
                                      "process (grove::allocate makes it mappable; GROVE_DIRECT=2 "
                                      "copies it through the kernel)";
    return;
  }
  const size_t block = call_.count * elementBytes_;
  const size_t n = static_cast<size_t>(call_.nranks);
  for (int q = 0; q < call_.nranks; ++q) {
    if (q == call_.rank) continue;
    Peer& peer = peers_[q];
    // What this rank reads of q's buffers, and how much each must hold.
    size_t inputNeeded = 0;
    size_t outputNeeded = 0;
    switch (call_.collective) {
      case Collective::kAllReduce:
        inputNeeded = outputNeeded = block;
        break;
      case Collective::kReduceScatter:
        inputNeeded = block * n;
        break;
      case Collective::kAllGather:
        inputNeeded = block;
        break;
      default:  // broadcast: the root's input only
        inputNeeded = q == call_.root ? block : 0;
        break;
    }
    peer.mappedInput = resolve(q, peer.input, inputNeeded);
    peer.mappedOutput = resolve(q, peer.output, outputNeeded);
    const bool copied = (inputNeeded > 0 && peer.mappedInput == nullptr) ||
                        (outputNeeded > 0 && peer.mappedOutput == nullptr);
    copiedPeers_ += copied ? 1 : 0;
  }
}

DirectExecution::ReadStatus DirectExecution::copyFrom(int q, bool output, size_t offset,
                                                      size_t bytes, char* to) {
  if (bytes == 0) return {};
  const Peer& peer = peers_[q];
  const char* mapped = output ? peer.mappedOutput : peer.mappedInput;
  if (mapped != nullptr) {
    std::memcpy(to, mapped + offset, bytes);
  } else {
    if (!memory_->read(q, (output ? peer.output : peer.input).address + offset, to, bytes)) {
      return {q};
    }
  }
  return {};
}

// to[0, end - begin) = op over ranks q (in rank order) of input_q[begin, end) (elements),
// finalized.
DirectExecution::ReadStatus DirectExecution::reduceShare(size_t begin, size_t end, char* to) {
  const size_t es = elementBytes_;
  const size_t tileElems =
      std::max<size_t>(1, (copiedPeers_ > 0 ? kCopiedTileBytes : kMappedTileBytes) / es);
  const int n = call_.nranks;
  const int me = call_.rank;
  char* staging[kStagingTiles];
  for (int i = 0; i < kStagingTiles; ++i) staging[i] = call_.staging + i * kCopiedTileBytes;
  for (size_t first = begin; first < end; first += tileElems) {
    const size_t elems = std::min(tileElems, end - first);
    const size_t bytes = elems * es;
    char* acc = to + (first - begin) * es;
    const char* own = call_.input + first * es;
    // In place, `acc` is this rank's own operand; the first combine (ranks 0 and 1) writes
    // it, so a later rank's own operand is set aside first.
    if (own == acc && me >= 2) {
      std::memcpy(staging[2], own, bytes);
      own = staging[2];
    }
    // Rank q's operand, or nullptr when its memory cannot be read.
    auto operand = [&](int q, char* slot) -> const char* {
      if (q == me) return own;
      if (peers_[q].mappedInput != nullptr) return peers_[q].mappedInput + first * es;
      if (!memory_->read(q, peers_[q].input.address + first * es, slot, bytes)) return nullptr;
      return slot;
    };
    const char* a = operand(0, staging[0]);
    if (a == nullptr) return {0};
    for (int q = 1; q < n; ++q) {
      const char* b = operand(q, staging[1]);
      if (b == nullptr) return {q};
      if (q == n - 1) {
        reduceFinalize(acc, a, b, elems, call_.type, call_.op, n);
      } else {
        reduce(acc, a, b, elems, call_.type, call_.op);
      }
      a = acc;
    }
  }
  return {};
}

DirectExecution::ReadStatus DirectExecution::work() {
  const size_t es = elementBytes_;
  const size_t block = call_.count * es;
  const int me = call_.rank;
  switch (call_.collective) {
    case Collective::kAllReduce:
      return {};  // In rounds: advanceRounds().
    case Collective::kReduceScatter:
      return reduceShare(call_.count * me, call_.count * (me + 1), call_.output);
    case Collective::kAllGather: {
      char* mine = call_.output + me * block;
      if (call_.input != mine) std::memmove(mine, call_.input, block);
      for (int q = 0; q < call_.nranks; ++q) {
        if (q == me) continue;
        if (ReadStatus read = copyFrom(q, false, 0, block, call_.output + q * block); !read.ok()) {
          return read;
        }
      }
      return {};
    }
    default:  // broadcast
      if (me == call_.root) {
        if (call_.input != call_.output) std::memmove(call_.output, call_.input, block);
        return {};
      }
      return copyFrom(call_.root, false, 0, block, call_.output);
  }
}

void DirectExecution::shareOfRound(uint32_t round, int q, size_t* begin, size_t* end) const {
  const size_t first = round * roundElems_;
  const size_t length = std::min(roundElems_, call_.count - first);
  const size_t n = static_cast<size_t>(call_.nranks);
  *begin = first + length * q / n;
  *end = first + length * (q + 1) / n;
}

bool DirectExecution::advanceRounds() {
  // Round k: reduce this rank's share of it, say so ("reduced" message k + 1), and copy share
  // q from rank q's output as soon as q says the same.
  const size_t es = elementBytes_;
  while (round_ < rounds_) {
    size_t begin = 0;
    size_t end = 0;
    if (!roundReduced_) {
      shareOfRound(round_, call_.rank, &begin, &end);
      if (ReadStatus read = reduceShare(begin, end, call_.output + begin * es); !read.ok()) {
        unreadablePeer_ = read.unreadable;
        return false;
      }
      roundReduced_ = true;
    }
    const bool sent = sendToAll(round_ + 1);
    bool all = true;
    for (int q = 0; q < call_.nranks; ++q) {
      if (q == call_.rank || peers_[q].received > round_ + 1) continue;
      if (!receive(q)) {
        if (!error_.empty()) return false;
        all = false;
        continue;
      }
      shareOfRound(round_, q, &begin, &end);
      if (ReadStatus read =
              copyFrom(q, true, begin * es, (end - begin) * es, call_.output + begin * es);
          !read.ok()) {
        unreadablePeer_ = read.unreadable;
        return false;
      }
    }
    if (!sent || !all) return false;
    ++round_;
    roundReduced_ = false;
  }
  return true;
}

Progress DirectExecution::blockedOnUnreadable(int peer) {
  waitingFor_ = peer;
  const auto now = std::chrono::steady_clock::now();
  if (!unreadableSince_) unreadableSince_ = now;
  if (now - *unreadableSince_ < kUnreadableGrace) return Progress::kBlocked;
  fail(ErrorCode::kRemoteError, memory_->readFailure());
  return Progress::kFailed;
}

Progress DirectExecution::advance() {
  const Phase before = phase_;
  try {
    if (phase_ == Phase::kHello) {
      const bool sent = sendToAll(0);
      if (!receiveHellos()) return error_.empty() ? Progress::kBlocked : Progress::kFailed;
      if (!sent) return Progress::kBlocked;
      resolvePeers();
      if (declined_) {
        phase_ = Phase::kFinished;
        return Progress::kDone;
      }
      if (ReadStatus read = work(); !read.ok()) return blockedOnUnreadable(read.unreadable);
      phase_ = call_.collective == Collective::kAllReduce ? Phase::kRounds : Phase::kFinishing;
    }
    if (phase_ == Phase::kRounds) {
      if (!advanceRounds()) {
        if (!error_.empty()) return Progress::kFailed;
        if (unreadablePeer_ >= 0) return blockedOnUnreadable(std::exchange(unreadablePeer_, -1));
        return phase_ != before ? Progress::kMoved : Progress::kBlocked;
      }
      phase_ = Phase::kFinishing;
    }
    if (phase_ == Phase::kFinishing) {
      const uint32_t last = rounds_ + 1;
      const bool sent = sendToAll(last);
      bool all = true;
      for (int q = 0; q < call_.nranks; ++q) {
        if (q == call_.rank || peers_[q].received > last) continue;
        if (!receive(q)) {
          if (!error_.empty()) return Progress::kFailed;
          all = false;
        }
      }
      if (!sent || !all) return phase_ != before ? Progress::kMoved : Progress::kBlocked;
      // A peer's "done" says it finished reading, not that its buffers stay put: a peer that
      // then saw a failure left the call and its buffers may have been freed or reused while
      // this rank still read them (seen as a wrong result under ASan, whose free() writes
      // into the freed block). A rank marks itself failed before it leaves the call, so what
      // was read is trusted only if no peer is marked now; otherwise the failure machinery
      // fails the call naming the origin.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (const int failed = transport_->failedPeer(); failed >= 0) {
        waitingFor_ = failed;
        return Progress::kBlocked;
      }
      phase_ = Phase::kFinished;
    }
  } catch (const Error& error) {
    fail(error.code(), error.what());
    return Progress::kFailed;
  }
  return Progress::kDone;
}

std::string DirectExecution::waitDescription() const {
  const char* what = phase_ == Phase::kHello    ? "its buffer descriptors"
                     : phase_ == Phase::kRounds ? "its reduced share"
                                                : "it to finish reading this rank's buffers";
  return fmt::format("receiving from rank {} (direct: waiting for {})", waitingFor_, what);
}

}  // namespace grove::exec
