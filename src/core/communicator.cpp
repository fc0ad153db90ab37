// Communicator: argument checking and the translation of each call into an operation (a
// bound plan over the caller's buffers, or point-to-point transfers) that CommState runs.
#include "grove/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "core/call_guard.hpp"
#include "core/collective_call.hpp"
#include "core/comm_state.hpp"
#include "core/comm_topology.hpp"
#include "core/validate.hpp"
#include "transport/inproc/inproc_transport.hpp"

namespace grove {

using detail::CallGuard;
using detail::CollectiveCall;
using Shape = plan::CallShape;
using detail::CommState;
using plan::Collective;

// ---- Request ---------------------------------------------------------------------------

Request::Request(std::shared_ptr<detail::Operation> op, std::weak_ptr<CommState> comm)
    : op_(std::move(op)), comm_(std::move(comm)) {}
Request::~Request() = default;
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;

namespace {

void throwIfFailed(const detail::Operation& op) {
  if (op.state == detail::Operation::State::kFailed) throw Error(op.error, op.message);
}

void requireValid(const std::shared_ptr<detail::Operation>& op) {
  if (!op) throw Error(ErrorCode::kInvalidUsage, "grove Request: this request holds no operation");
}

}  // namespace

template <class Drive>
bool Request::advance(const char* call, Drive&& drive) {
  requireValid(op_);
  // The operation's state is written by whichever thread drives the communicator: read it
  // only inside the communicator. Once the communicator is gone the operation is final
  // (~CommState fails what was queued) and nobody writes it any more.
  if (std::shared_ptr<CommState> state = comm_.lock()) {
    detail::CallGuard guard(*state, call, op_->sequence);
    if (!op_->finished()) drive(*state);
    throwIfFailed(*op_);
    return op_->finished();
  }
  throwIfFailed(*op_);
  if (!op_->finished()) {
    // Held by a group that never ended: ~CommState fails only what was queued.
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove {}: {} never ran: its communicator was destroyed first", call,
                            op_->describe()));
  }
  return true;
}

bool Request::test() {
  return advance("Request::test", [&](CommState& state) { state.test(*op_); });
}

void Request::wait() {
  advance("Request::wait", [&](CommState& state) { state.waitFor(*op_, std::nullopt); });
}

bool Request::wait(std::chrono::steady_clock::time_point deadline) {
  return advance("Request::wait", [&](CommState& state) { state.waitFor(*op_, deadline); });
}

// ---- Communicator ----------------------------------------------------------------------

Communicator::Communicator() = default;
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::Communicator(std::shared_ptr<CommState> state) : state_(std::move(state)) {}

std::vector<Communicator> Communicator::createInProcess(int nranks, const Options& options) {
  if (nranks < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove createInProcess: nranks is {} (expected at least 1)", nranks));
  }
  detail::Config config = detail::Config::resolve(options.values());
  auto world = std::make_shared<transport::InprocWorld>(
      nranks, transport::FifoGeometry{config.slotBytes, config.fifoDepth});
  std::vector<Communicator> comms;
  comms.reserve(nranks);
  for (int r = 0; r < nranks; ++r) {
    comms.push_back(Communicator(std::make_shared<CommState>(
        std::make_unique<transport::InprocTransport>(world, r), config)));
  }
  return comms;
}

CommState& Communicator::state() const {
  if (!state_) {
    throw Error(ErrorCode::kInvalidUsage,
                "grove: this Communicator is empty (default-constructed, moved-from or the "
                "result of split with color -1)");
  }
  return *state_;
}

int Communicator::rank() const { return state().rank(); }
int Communicator::size() const { return state().size(); }

namespace {

// Runs `call` to completion (or queues it inside a group).
void run(CommState& state, const CollectiveCall& call) {
  auto op = detail::issue(state, call);
  if (!state.inGroup()) {
    state.waitFor(*op, std::nullopt);
    throwIfFailed(*op);
  }
}

}  // namespace

// Each public entry first takes the communicator (CallGuard, the one-thread check).
#define GROVE_BLOCKING_AND_ASYNC(NAME, PARAMS, CALL)         \
  void Communicator::NAME PARAMS {                           \
    CommState& s = state();                                  \
    CallGuard guard(s, #NAME, s.upcomingSequence());         \
    run(s, CALL);                                            \
  }                                                          \
  Request Communicator::NAME##Async PARAMS {                 \
    CommState& s = state();                                  \
    CallGuard guard(s, #NAME "Async", s.upcomingSequence()); \
    return Request(detail::issue(s, CALL), state_);          \
  }

GROVE_BLOCKING_AND_ASYNC(allReduce,
                         (const void* sendbuf, void* recvbuf, size_t count, DataType type,
                          ReduceOp op, const CallOptions& options),
                         (CollectiveCall{Shape::made(Collective::kAllReduce, count, type, op, -1),
                                         "allReduce", sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(broadcast,
                         (const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                          const CallOptions& options),
                         (CollectiveCall{
                             Shape::made(Collective::kBroadcast, count, type, ReduceOp::kSum, root),
                             "broadcast", sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(reduce,
                         (const void* sendbuf, void* recvbuf, size_t count, DataType type,
                          ReduceOp op, int root, const CallOptions& options),
                         (CollectiveCall{Shape::made(Collective::kReduce, count, type, op, root),
                                         "reduce", sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(
    allGather,
    (const void* sendbuf, void* recvbuf, size_t count, DataType type, const CallOptions& options),
    (CollectiveCall{Shape::made(Collective::kAllGather, count, type, ReduceOp::kSum, -1),
                    "allGather", sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(reduceScatter,
                         (const void* sendbuf, void* recvbuf, size_t count, DataType type,
                          ReduceOp op, const CallOptions& options),
                         (CollectiveCall{
                             Shape::made(Collective::kReduceScatter, count, type, op, -1),
                             "reduceScatter", sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(
    allToAll,
    (const void* sendbuf, void* recvbuf, size_t count, DataType type, const CallOptions& options),
    (CollectiveCall{Shape::made(Collective::kAllToAll, count, type, ReduceOp::kSum, -1), "allToAll",
                    sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(gather,
                         (const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                          const CallOptions& options),
                         (CollectiveCall{
                             Shape::made(Collective::kGather, count, type, ReduceOp::kSum, root),
                             "gather", sendbuf, recvbuf, &options}))
GROVE_BLOCKING_AND_ASYNC(scatter,
                         (const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                          const CallOptions& options),
                         (CollectiveCall{
                             Shape::made(Collective::kScatter, count, type, ReduceOp::kSum, root),
                             "scatter", sendbuf, recvbuf, &options}))

namespace {
const CallOptions kNoOptions{};
}  // namespace

GROVE_BLOCKING_AND_ASYNC(
    allToAllv,
    (const void* sendbuf, std::span<const size_t> sendCounts, std::span<const size_t> sendDispls,
     void* recvbuf, std::span<const size_t> recvCounts, std::span<const size_t> recvDispls,
     DataType type, const CallOptions& options),
    (CollectiveCall{Shape::made(Collective::kAllToAllv, 0, type, ReduceOp::kSum, -1), "allToAllv",
                    sendbuf, recvbuf, &options, -1, sendCounts, sendDispls, recvCounts,
                    recvDispls}))
GROVE_BLOCKING_AND_ASYNC(barrier, (),
                         (CollectiveCall{Shape::made(Collective::kBarrier, 0, DataType::kUint8,
                                                     ReduceOp::kSum, -1),
                                         "barrier", nullptr, nullptr, &kNoOptions}))

#undef GROVE_BLOCKING_AND_ASYNC

void Communicator::send(const void* sendbuf, size_t count, DataType type, int peer) {
  CommState& s = state();
  CallGuard guard(s, "send", s.upcomingSequence());
  run(s, CollectiveCall{Shape::made(Collective::kSendRecv, count, type, ReduceOp::kSum, -1), "send",
                        sendbuf, nullptr, &kNoOptions, peer});
}
void Communicator::recv(void* recvbuf, size_t count, DataType type, int peer) {
  CommState& s = state();
  CallGuard guard(s, "recv", s.upcomingSequence());
  run(s, CollectiveCall{Shape::made(Collective::kSendRecv, count, type, ReduceOp::kSum, -1), "recv",
                        nullptr, recvbuf, &kNoOptions, peer});
}
Request Communicator::sendAsync(const void* sendbuf, size_t count, DataType type, int peer) {
  CommState& s = state();
  CallGuard guard(s, "sendAsync", s.upcomingSequence());
  return Request(detail::issue(s, CollectiveCall{Shape::made(Collective::kSendRecv, count, type,
                                                             ReduceOp::kSum, -1),
                                                 "send", sendbuf, nullptr, &kNoOptions, peer}),
                 state_);
}
Request Communicator::recvAsync(void* recvbuf, size_t count, DataType type, int peer) {
  CommState& s = state();
  CallGuard guard(s, "recvAsync", s.upcomingSequence());
  return Request(detail::issue(s, CollectiveCall{Shape::made(Collective::kSendRecv, count, type,
                                                             ReduceOp::kSum, -1),
                                                 "recv", nullptr, recvbuf, &kNoOptions, peer}),
                 state_);
}

void Communicator::groupStart() {
  CommState& s = state();
  CallGuard guard(s, "groupStart", 0);
  detail::checkUsable(s, "groupStart");
  s.groupStart();
}

void Communicator::groupEnd() {
  CommState& s = state();
  CallGuard guard(s, "groupEnd", 0);
  auto last = s.groupEnd();
  if (last) {
    s.waitFor(*last, std::nullopt);
    throwIfFailed(*last);
  }
}

Request Communicator::groupEndAsync() {
  CommState& s = state();
  CallGuard guard(s, "groupEndAsync", 0);
  auto last = s.groupEnd();
  if (!last) {
    last = s.newOperation();
    last->state = detail::Operation::State::kDone;
  }
  return Request(std::move(last), state_);
}

Communicator Communicator::split(int color, int key) {
  CommState& s = state();
  CallGuard guard(s, "split", 0);
  detail::checkUsable(s, "split");
  if (color < -1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove split (rank {} of {}): color {} is negative (expected >= 0, "
                            "or -1 for no communicator)",
                            s.rank(), s.size(), color));
  }
  if (s.inGroup()) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove split (rank {} of {}): cannot split inside a group", s.rank(),
                            s.size()));
  }
  const int64_t mine[2] = {color, key};
  std::vector<int64_t> all(2 * static_cast<size_t>(s.size()));
  allGather(mine, all.data(), 2, DataType::kInt64);
  std::vector<std::pair<int64_t, int>> members;  // (key, old rank) of this color
  for (int q = 0; q < s.size(); ++q) {
    if (all[2 * q] == color) members.emplace_back(all[2 * q + 1], q);
  }
  uint64_t sequence = s.nextSplitSequence();
  if (color == -1) return Communicator();
  std::sort(members.begin(), members.end());
  std::vector<int> oldRanks;
  int newRank = 0;
  for (const auto& [memberKey, oldRank] : members) {
    if (oldRank == s.rank()) newRank = static_cast<int>(oldRanks.size());
    oldRanks.push_back(oldRank);
  }
  auto transport = s.transport().split(sequence, color, oldRanks, newRank);
  return Communicator(std::make_shared<CommState>(
      std::move(transport), s.config(), detail::subsetTopology(s.topology(), oldRanks, newRank)));
}

void Communicator::abort() {
  CommState& s = state();
  // Another thread inside a call (a collective stuck on a peer, a progress thread's wait):
  // that thread aborts where it waits, so everything the communicator holds is still
  // touched by one thread at a time; this one waits for it to leave, then makes sure.
  const uint32_t inside = s.inUse().thread.load(std::memory_order_acquire);
  if (inside != 0 && inside != detail::currentThreadId()) {
    s.requestAbort();
    while (s.inUse().thread.load(std::memory_order_acquire) == inside) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (s.aborted()) return;  // it did: nothing is left to do
  }
  CallGuard guard(s, "abort", 0);
  s.abort();
}

ErrorCode Communicator::getAsyncError() const { return state().asyncError(); }

}  // namespace grove
