#include "exec/one_sided.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/enforce.hpp"
#include "exec/executor.hpp"
#include "exec/message_tag.hpp"
#include "exec/reduce.hpp"

namespace grove::exec {
namespace {

using plan::BufferKind;

// How long a call waits for the failure machinery to explain an unreadable peer buffer
// before it fails with the read error itself. A failure reaches every rank in about 0.1 s,
// but took up to 2.0 s with two ASan fault tests sharing 2 CPUs (2 s of grace then named
// the unreadable buffer instead of the dead rank).
constexpr std::chrono::seconds kUnreadableGrace{10};

// Message kinds (the first word of the prologue's and the epilogue's messages).
constexpr uint32_t kHello = 1;
constexpr uint8_t kDone = 3;

// Hello::flags.
constexpr uint32_t kReadsAllPeers = 1;  // The sender can read every peer's memory.
constexpr uint32_t kAllowsCopies = 2;   // The sender runs over kernel copies too.
constexpr uint32_t kReadsShift = 2;     // Then one bit per BufferKind the sender's plan reads.

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

uint32_t bit(BufferKind kind) { return 1u << static_cast<uint32_t>(kind); }

}  // namespace

size_t OneSided::stagingBytes() { return kStagingTiles * kCopiedTileBytes; }

void OneSided::start(const BoundPlan& plan, const CallBuffers& buffers) {
  plan_ = &plan;
  buffers_ = &buffers;
  memory_ = plan.transport->peerMemory();
  elementBytes_ = dataTypeSize(buffers.type);
  peers_.assign(static_cast<size_t>(plan.plan.nranks), Peer{});
  for (const transport::Fifo* fifo : plan.peerSend) {
    if (fifo != nullptr) GROVE_ENFORCE_GE(fifo->slotBytes(), sizeof(Hello), "a hello fits a slot");
  }
  phase_ = Phase::kPrologue;
  declined_ = false;
  declineReason_ = {};
  copiedPeers_ = 0;
  waitingFor_ = -1;
  unreadablePeer_ = -1;
  unreadableSince_.reset();
  error_.clear();
  errorCode_ = ErrorCode::kInvalidUsage;
}

void OneSided::fail(ErrorCode code, std::string message) {
  errorCode_ = code;
  error_ = std::move(message);
}

bool OneSided::sendToAll(bool done) {
  bool all = true;
  const int me = plan_->plan.rank;
  for (int q = 0; q < plan_->plan.nranks; ++q) {
    Peer& peer = peers_[static_cast<size_t>(q)];
    if (q == me || (done ? peer.doneSent : peer.helloSent)) continue;
    transport::Fifo& fifo = *plan_->peerSend[static_cast<size_t>(q)];
    void* slot = fifo.tryAcquire();
    if (slot == nullptr) {
      all = false;
      continue;
    }
    size_t bytes = 1;
    if (done) {
      *static_cast<uint8_t*>(slot) = kDone;
      peer.doneSent = true;
    } else {
      Hello hello;
      hello.flags = (memory_ != nullptr && memory_->canReadAllPeers() ? kReadsAllPeers : 0) |
                    (buffers_->allowCopies ? kAllowsCopies : 0) |
                    (uint32_t{plan_->readsOfPeers} << kReadsShift);
      hello.input = buffers_->inputDescriptor;
      hello.output = buffers_->outputDescriptor;
      std::memcpy(slot, &hello, sizeof hello);
      bytes = sizeof hello;
      peer.helloSent = true;
    }
    fifo.commit(bytes, buffers_->tag);
    moved_ = true;
  }
  return all;
}

bool OneSided::take(int q, bool done) {
  Peer& peer = peers_[static_cast<size_t>(q)];
  transport::Fifo& fifo = *plan_->peerRecv[static_cast<size_t>(q)];
  size_t bytes = 0;
  const transport::MessageTag* tag = nullptr;
  const void* data = fifo.tryPeek(&bytes, &tag);
  if (data == nullptr) {
    if (waitingFor_ < 0) waitingFor_ = q;  // the first peer still missing
    return false;
  }
  if (Status received = checkReceived(buffers_->tag, *tag, data, bytes, q, 0); !received.ok()) {
    fail(received.code(), received.message());
    return false;
  }
  const size_t expected = done ? 1 : sizeof(Hello);
  uint32_t kind = 0;
  if (bytes == expected) {
    if (done) {
      kind = *static_cast<const uint8_t*>(data);
    } else {
      std::memcpy(&kind, data, sizeof kind);
    }
  }
  if (kind != (done ? kDone : kHello)) {
    fail(ErrorCode::kInvalidUsage,
         fmt::format("one-sided {}: the message from rank {} is {} bytes of kind {} (expected "
                     "{} bytes of kind {})",
                     done ? "epilogue" : "prologue", q, bytes, kind, expected,
                     done ? kDone : kHello));
    return false;
  }
  if (done) {
    peer.doneTaken = true;
  } else {
    Hello hello;
    std::memcpy(&hello, data, sizeof hello);
    peer.input = hello.input;
    peer.output = hello.output;
    peer.flags = hello.flags;
    peer.helloTaken = true;
  }
  fifo.release();
  moved_ = true;
  return true;
}

Progress OneSided::exchange(bool done) {
  moved_ = false;
  waitingFor_ = -1;
  const bool sent = sendToAll(done);
  bool all = true;
  for (int q = 0; q < plan_->plan.nranks; ++q) {
    const Peer& peer = peers_[static_cast<size_t>(q)];
    if (q == plan_->plan.rank || (done ? peer.doneTaken : peer.helloTaken)) continue;
    if (!take(q, done)) {
      if (!error_.empty()) return Progress::kFailed;
      all = false;
    }
  }
  if (sent && all) return Progress::kDone;
  return moved_ ? Progress::kMoved : Progress::kBlocked;
}

Progress OneSided::prologue() {
  try {
    if (const Progress hellos = exchange(false); hellos != Progress::kDone) return hellos;
    decide();
  } catch (const Error& error) {
    fail(error.code(), error.what());
    return Progress::kFailed;
  }
  waitingFor_ = -1;
  phase_ = Phase::kSteps;
  return Progress::kDone;
}

const char* OneSided::resolve(int q, const transport::BufferDescriptor& buffer, size_t needed) {
  if (needed == 0) return nullptr;
  if (buffer.address == 0 || buffer.bytes < needed) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("one-sided prologue: rank {} described a buffer of {} bytes at "
                            "{:#x}; this call reads {} bytes of it",
                            q, buffer.bytes, buffer.address, needed));
  }
  return memory_->map(q, buffer);
}

void OneSided::decide() {
  // Every rank saw the same hellos (its own flags and buffers included), so all decline or
  // none: when a rank cannot read its peers, or when a buffer of a kind some rank reads
  // would have to be copied by the kernel and not every rank allows that.
  const int me = plan_->plan.rank;
  bool everyoneReads = memory_ != nullptr && memory_->canReadAllPeers();
  bool everyoneCopies = buffers_->allowCopies;
  uint32_t readKinds = plan_->readsOfPeers;
  for (int q = 0; q < plan_->plan.nranks; ++q) {
    if (q == me) continue;
    const uint32_t flags = peers_[static_cast<size_t>(q)].flags;
    everyoneReads = everyoneReads && (flags & kReadsAllPeers) != 0;
    everyoneCopies = everyoneCopies && (flags & kAllowsCopies) != 0;
    readKinds |= flags >> kReadsShift;
  }
  bool allRegistered = true;  // Every buffer of a kind some rank reads is grove::allocate's.
  for (int q = 0; q < plan_->plan.nranks; ++q) {
    const bool self = q == me;
    const Peer& peer = peers_[static_cast<size_t>(q)];
    const transport::BufferDescriptor& input = self ? buffers_->inputDescriptor : peer.input;
    const transport::BufferDescriptor& output = self ? buffers_->outputDescriptor : peer.output;
    if ((readKinds & bit(BufferKind::kInput)) != 0 && input.address != 0 && input.region == 0) {
      allRegistered = false;
    }
    if ((readKinds & bit(BufferKind::kOutput)) != 0 && output.address != 0 && output.region == 0) {
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
  const plan::Plan& p = plan_->plan;
  const size_t inputBytes = size_t{p.inputBlocks} * buffers_->input.blockElems * elementBytes_;
  const size_t outputBytes = size_t{p.outputBlocks} * buffers_->output.blockElems * elementBytes_;
  for (int q = 0; q < p.nranks; ++q) {
    if (q == me) continue;
    Peer& peer = peers_[static_cast<size_t>(q)];
    const uint8_t reads = plan_->peerReads[static_cast<size_t>(q)];
    const bool readsInput = (reads & bit(BufferKind::kInput)) != 0;
    const bool readsOutput = (reads & bit(BufferKind::kOutput)) != 0;
    peer.mappedInput = resolve(q, peer.input, readsInput ? inputBytes : 0);
    peer.mappedOutput = resolve(q, peer.output, readsOutput ? outputBytes : 0);
    const bool copied = (readsInput && peer.mappedInput == nullptr) ||
                        (readsOutput && peer.mappedOutput == nullptr);
    copiedPeers_ += copied ? 1 : 0;
  }
}

bool OneSided::get(int peer, BufferKind buffer, size_t offset, size_t bytes, char* to) {
  if (bytes == 0) return true;
  const Peer& p = peers_[static_cast<size_t>(peer)];
  const bool input = buffer == BufferKind::kInput;
  const char* mapped = input ? p.mappedInput : p.mappedOutput;
  if (mapped != nullptr) {
    std::memcpy(to, mapped + offset, bytes);
    return true;
  }
  if (memory_->read(peer, (input ? p.input : p.output).address + offset, to, bytes)) return true;
  unreadablePeer_ = peer;
  return false;
}

bool OneSided::reduceAll(BufferKind buffer, size_t offset, size_t elements, const char* own,
                         char* to, bool finalize) {
  const size_t es = elementBytes_;
  const size_t tileElems =
      std::max<size_t>(1, (copiedPeers_ > 0 ? kCopiedTileBytes : kMappedTileBytes) / es);
  const int n = plan_->plan.nranks;
  const int me = plan_->plan.rank;
  const DataType type = buffers_->type;
  const ReduceOp op = buffers_->op;
  char* staging[kStagingTiles];
  for (int i = 0; i < kStagingTiles; ++i) staging[i] = buffers_->staging + i * kCopiedTileBytes;
  for (size_t first = 0; first < elements; first += tileElems) {
    const size_t elems = std::min(tileElems, elements - first);
    const size_t bytes = elems * es;
    char* acc = to + first * es;
    const char* mine = own + first * es;
    if (n == 1) {
      if (mine != acc) std::memmove(acc, mine, bytes);
      if (finalize) exec::finalize(acc, elems, type, op, n);
      continue;
    }
    // In place, `acc` is this rank's own operand; the first combine (ranks 0 and 1) writes
    // it, so a later rank's own operand is set aside first.
    if (mine == acc && me >= 2) {
      std::memcpy(staging[2], mine, bytes);
      mine = staging[2];
    }
    // Rank q's operand, or nullptr when its memory cannot be read.
    auto operand = [&](int q, char* slot) -> const char* {
      if (q == me) return mine;
      const size_t at = offset + first * es;
      const Peer& peer = peers_[static_cast<size_t>(q)];
      const char* mapped = buffer == BufferKind::kInput ? peer.mappedInput : peer.mappedOutput;
      if (mapped != nullptr) return mapped + at;
      return get(q, buffer, at, bytes, slot) ? slot : nullptr;
    };
    const char* a = operand(0, staging[0]);
    if (a == nullptr) return false;
    for (int q = 1; q < n; ++q) {
      const char* b = operand(q, staging[1]);
      if (b == nullptr) return false;
      if (q == n - 1 && finalize) {
        reduceFinalize(acc, a, b, elems, type, op, n);
      } else {
        reduce(acc, a, b, elems, type, op);
      }
      a = acc;
    }
  }
  return true;
}

Progress OneSided::unreadable() {
  waitingFor_ = unreadablePeer_;
  const auto now = std::chrono::steady_clock::now();
  if (!unreadableSince_) unreadableSince_ = now;
  if (now - *unreadableSince_ < kUnreadableGrace) return Progress::kBlocked;
  fail(ErrorCode::kRemoteError, memory_->readFailure());
  return Progress::kFailed;
}

Progress OneSided::epilogue() {
  phase_ = Phase::kEpilogue;
  if (const Progress dones = exchange(true); dones != Progress::kDone) return dones;
  // A peer's "done" says it finished reading, not that its buffers stay put: a peer that
  // then saw a failure left the call and its buffers may have been freed or reused while
  // this rank still read them (seen as a wrong result under ASan, whose free() writes into
  // the freed block). A rank marks itself failed before it leaves the call, so what was read
  // is trusted only if no peer is marked now; otherwise the failure machinery fails the call
  // naming the origin.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (const int failed = plan_->transport->failedPeer(); failed >= 0) {
    waitingFor_ = failed;
    return Progress::kBlocked;
  }
  waitingFor_ = -1;
  phase_ = Phase::kFinished;
  return Progress::kDone;
}

const char* OneSided::waitingForWhat() const {
  switch (phase_) {
    case Phase::kPrologue:
      return "its buffer descriptors, the one-sided prologue";
    case Phase::kSteps:
      return "its memory to become readable";
    default:
      return "it to finish reading this rank's buffers, the one-sided epilogue";
  }
}

}  // namespace grove::exec
