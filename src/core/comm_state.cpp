#include "core/comm_state.hpp"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "algo/registry.hpp"
#include "common/enforce.hpp"
#include "common/log.hpp"
#include "core/comm_topology.hpp"
#include "core/signature_check.hpp"
#include "exec/message_tag.hpp"
#include "plan/printer.hpp"
#include "plan/verifier.hpp"

namespace grove::detail {

using Clock = std::chrono::steady_clock;

namespace {

/// Messages carry a hash of their algorithm's name; the executor's layer cannot see the
/// registry, so the names are handed down once, before any communicator exchanges a message.
void nameAlgorithmsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string_view> names;
    for (const algo::Algorithm& algorithm : algo::algorithms()) names.push_back(algorithm.name);
    exec::nameAlgorithms(names);
  });
}

}  // namespace

CommState::CommState(std::unique_ptr<transport::Transport> transport, Config config,
                     std::shared_ptr<const topo::Topology> topology)
    : rank_(transport->rank()),
      size_(transport->size()),
      config_(std::move(config)),
      transport_(std::move(transport)),
      topology_(topology ? std::move(topology) : loadTopology(config_.topoFile, rank_, size_)) {
  if (topology_ && topology_->rankCount() != size_) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove: topology '{}' (rank {} of {}) has {} ranks, the "
                            "communicator has {}",
                            topology_->name, rank_, size_, topology_->rankCount(), size_));
  }
  if (config_.faultRank >= 0 && config_.faultRank != rank_) config_.faultDelay = {};
  nameAlgorithmsOnce();
  chooseWaitPolicy();
  if (!config_.tracePath.empty()) {
    tracer_ = std::make_unique<Tracer>(config_.tracePath, rank_, size_, config_.traceSteps);
  }
}

CommState::~CommState() {
  failQueued(ErrorCode::kInvalidUsage, "the communicator was destroyed");
  if (scratch_ != nullptr) munmap(scratch_, scratchBytes_);
}

std::shared_ptr<Operation> CommState::newOperation() {
  for (auto& op : pool_) {
    if (op.use_count() == 1) {
      op->reset();
      op->comm = this;
      return op;
    }
  }
  auto op = std::make_shared<Operation>();
  op->comm = this;
  if (pool_.size() < 64) pool_.push_back(op);
  return op;
}

const algo::Algorithm& CommState::chooseAlgorithm(const plan::PlanRequest& asked,
                                                  std::string_view forced) {
  // The communicator's topology always applies (callers such as tools may not set it): the
  // cached choice must be the same whoever asks first, on every rank.
  plan::PlanRequest request = asked;
  request.topology = topology_.get();
  SelectionKey key{
      static_cast<int>(request.collective), request.count, static_cast<int>(request.type),
      static_cast<int>(request.op),         request.root,  std::string(forced)};
  auto found = selections_.find(key);
  if (found != selections_.end()) return *found->second;
  algo::CostParams params;
  params.tileBytes = static_cast<double>(config_.slotBytes);
  params.fifoDepth = static_cast<double>(config_.fifoDepth);
  algo::Selection selection = algo::select(request, forced, config_.algo, params);
  log::info(rank_, "{} count {} {}: {}", plan::toString(request.collective), request.count,
            toString(request.type), selection.reason);
  if (selections_.size() > 4096) selections_.clear();
  selections_.emplace(std::move(key), selection.algorithm);
  return *selection.algorithm;
}

const exec::BoundPlan& CommState::boundPlan(const algo::Algorithm& algorithm,
                                            const plan::PlanRequest& asked) {
  plan::PlanRequest request = asked;
  request.topology = topology_.get();
  auto key = std::make_pair(&algorithm, request.root);
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  plan::Plan built = algorithm.build(request);
  // The executor binds the plan's peers to this rank's FIFOs: a plan of another rank or
  // world size would exchange messages with the wrong peers.
  GROVE_ENFORCE_EQ(built.rank, rank_, "algorithm", algorithm.name);
  GROVE_ENFORCE_EQ(built.nranks, size_, "algorithm", algorithm.name);
  if (config_.verifyPlans) {
    std::vector<plan::Plan> all;
    for (int r = 0; r < size_; ++r) {
      plan::PlanRequest other = request;
      other.rank = r;
      all.push_back(r == rank_ ? built : algorithm.build(other));
    }
    plan::VerifyOptions options;
    options.fifoDepth = static_cast<int>(config_.fifoDepth);
    Status result = plan::verify(all, options);
    if (!result.ok()) {
      throw Error(
          ErrorCode::kInternalError,
          fmt::format("grove: plan {} for {} failed verification on rank {}: {}", algorithm.name,
                      plan::toString(request.collective), rank_, result.message()));
    }
  }
  if (log::enabled(log::Level::kTrace)) log::trace(rank_, "{}", plan::toText(built));
  auto bound =
      std::make_unique<exec::BoundPlan>(exec::BoundPlan::bind(std::move(built), *transport_));
  return *plans_.emplace(key, std::move(bound)).first->second;
}

std::shared_ptr<Operation> CommState::submit(std::shared_ptr<Operation> op) {
  op->deadline = Clock::now() + (op->timeout.count() > 0 ? op->timeout : config_.timeout);
  if (groupDepth_ > 0) {
    if (op->plan == nullptr) {
      for (auto& held : grouped_) {
        if (held->plan == nullptr) {  // merge into the group's point-to-point batch
          for (Transfer& transfer : op->transfers) held->transfers.push_back(transfer);
          return held;
        }
      }
    }
    op->state = Operation::State::kQueued;
    grouped_.push_back(op);
    return op;
  }
  op->state = Operation::State::kQueued;
  queue_.push_back(op);
  return op;
}

void CommState::groupStart() { ++groupDepth_; }

std::shared_ptr<Operation> CommState::groupEnd() {
  if (groupDepth_ == 0) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove groupEnd (rank {} of {}): no group was started", rank_, size_));
  }
  if (--groupDepth_ > 0) return nullptr;
  std::shared_ptr<Operation> last;
  for (auto& op : grouped_) {
    queue_.push_back(op);
    last = op;
  }
  grouped_.clear();
  return last;
}

void CommState::start(Operation& op) {
  op.started = true;
  if (tracer_ != nullptr) op.traceStartNs = exec::traceNowNs();
  if (op.direct && directCallsToSkip_ > 0) {
    // A recent direct call declined: skip the hellos for a while (see advanceDirect).
    --directCallsToSkip_;
    op.direct = false;
  }
  if (op.direct) {
    op.directCall.staging = scratch(exec::DirectExecution::stagingBytes());
    op.directExecution.start(op.directCall, *transport_);
    return;
  }
  startPlan(op);
}

void CommState::startPlan(Operation& op) {
  if (op.plan == nullptr) {
    for (Transfer& transfer : op.transfers) {
      transfer.fifo = transfer.isSend ? &transport_->sendFifo(transfer.peer, 0)
                                      : &transport_->recvFifo(transfer.peer, 0);
    }
    return;
  }
  if (op.scratchBytes + op.stageBytes > 0) {
    char* base = scratch(op.scratchBytes + op.stageBytes);
    op.buffers.scratch.base = base;
    if (op.stageBytes > 0) {
      memcpy(base + op.scratchBytes, op.stageFrom, op.stageBytes);
      op.buffers.input.base = base + op.scratchBytes;
    }
  }
  if (!op.inputExtents.empty()) op.buffers.input.explicitExtents = op.inputExtents.data();
  if (!op.outputExtents.empty()) op.buffers.output.explicitExtents = op.outputExtents.data();
  op.buffers.trace = tracer_ != nullptr ? &tracer_->buffer() : nullptr;
  op.buffers.sequence = op.sequence;
  op.execution.start(*op.plan, op.buffers);
}

exec::Progress CommState::advanceTransfers(Operation& op) {
  bool moved = false;
  bool pending = false;
  const size_t slot = config_.slotBytes;
  for (size_t i = 0; i < op.transfers.size(); ++i) {
    Transfer& t = op.transfers[i];
    if (t.messages > 0 && t.moved == t.bytes) continue;
    // Transfers with the same peer and direction go in issue order.
    bool blockedByEarlier = false;
    for (size_t j = 0; j < i && !blockedByEarlier; ++j) {
      const Transfer& e = op.transfers[j];
      blockedByEarlier =
          e.isSend == t.isSend && e.peer == t.peer && !(e.messages > 0 && e.moved == e.bytes);
    }
    pending = true;
    if (blockedByEarlier) continue;
    while (t.messages == 0 || t.moved < t.bytes) {
      size_t piece = std::min(slot, t.bytes - t.moved);
      if (t.isSend) {
        void* out = t.fifo->tryAcquire();
        if (out == nullptr) break;
        if (piece) memcpy(out, t.buffer + t.moved, piece);
        if (config_.faultDelay.count() > 0) std::this_thread::sleep_for(config_.faultDelay);
        t.fifo->commit(piece, exec::stamped(t.tag, config_.checksum, out, piece));
      } else {
        size_t got = 0;
        const transport::MessageTag* tag = nullptr;
        const void* in = t.fifo->tryPeek(&got, &tag);
        if (in == nullptr) break;
        if (std::string problem = exec::checkReceived(t.tag, *tag, in, got, t.peer, 0, &op.error);
            !problem.empty()) {
          op.message = std::move(problem);
          return exec::Progress::kFailed;
        }
        if (got != piece) {
          op.message = fmt::format(
              "recv from rank {} of {} bytes got a message of {} bytes where {} were expected "
              "(does the sender's count and type match?)",
              t.peer, t.bytes, got, piece);
          return exec::Progress::kFailed;
        }
        if (piece) memcpy(t.buffer + t.moved, in, piece);
        t.fifo->release();
      }
      t.moved += piece;
      ++t.messages;
      moved = true;
    }
  }
  bool done = true;
  for (const Transfer& t : op.transfers) done = done && t.messages > 0 && t.moved == t.bytes;
  if (done || !pending) return exec::Progress::kDone;
  return moved ? exec::Progress::kMoved : exec::Progress::kBlocked;
}

exec::Progress CommState::advanceDirect(Operation& op) {
  exec::Progress progress = op.directExecution.advance();
  if (progress == exec::Progress::kFailed) {
    op.message = op.directExecution.error();
    op.error = op.directExecution.errorCode();
    return progress;
  }
  if (progress != exec::Progress::kDone) return progress;
  if (op.directExecution.declined()) {
    // Every rank saw the same hellos and declines alike: run the plan.
    if (!directDeclineLogged_) {
      log::info(rank_, "direct: {} declined: {}; it runs its plan (logged once)", op.describe(),
                op.directExecution.declineReason());
      directDeclineLogged_ = true;
    }
    // The next calls would most likely decline too (the same buffers, the same peers), and
    // each decline costs a round of hellos: skip the direct path for the next
    // kDirectCallsSkippedAfterDecline calls that could take it, then ask again. Operations
    // start in the same order on every rank and every rank declined this one, so every rank
    // skips the same calls.
    directCallsToSkip_ = kDirectCallsSkippedAfterDecline;
    op.direct = false;
    startPlan(op);
    return advance(op);
  }
  op.algorithm = exec::kDirectAlgorithm;
  return progress;
}

exec::Progress CommState::advance(Operation& op) {
  if (!op.started) start(op);
  if (op.direct) return advanceDirect(op);
  if (op.plan == nullptr) return advanceTransfers(op);
  exec::Progress progress = op.execution.advance();
  if (progress == exec::Progress::kFailed) {
    op.message = op.execution.error();
    op.error = op.execution.errorCode();
  }
  return progress;
}

bool CommState::poll() {
  bool moved = false;
  while (!queue_.empty()) {
    Operation& op = *queue_.front();
    exec::Progress progress;
    try {
      progress = advance(op);
    } catch (const Error& error) {
      op.message = error.what();
      progress = exec::Progress::kFailed;
    }
    if (progress == exec::Progress::kFailed) {
      std::string reason = op.message;
      ErrorCode code = op.error != ErrorCode::kSuccess ? op.error : ErrorCode::kInvalidUsage;
      fail(op, code,
           fmt::format("grove: {} failed on rank {} of {}: {}", op.describe(), rank_, size_,
                       reason));
      return true;
    }
    if (progress == exec::Progress::kDone && op.signatureCheck) {
      if (Status signatures = compareSignatures(op, rank_, size_); !signatures.ok()) {
        failSignatureCheck(op, signatures.message());
        return true;
      }
    }
    if (progress == exec::Progress::kDone) {
      op.state = Operation::State::kDone;
      if (op.plan != nullptr && !op.signatureCheck) lastAlgorithm_ = op.algorithm;
      if (tracer_ != nullptr) traceCall(op);
      queue_.pop_front();
      moved = true;
      continue;
    }
    moved = moved || progress == exec::Progress::kMoved;
    break;
  }
  return moved;
}

void CommState::test(Operation& op) {
  requireQueued(op);
  if (!poll() && !op.finished()) failIfStuck(Clock::now());
}

void CommState::requireQueued(const Operation& op) const {
  if (!op.finished() && queue_.empty()) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove (rank {} of {}): waiting on {} whose group has not ended; call "
                            "groupEnd first",
                            rank_, size_, op.describe()));
  }
}

void CommState::traceCall(const Operation& op) {
  exec::CallRecord record;
  record.startNs = op.traceStartNs != 0 ? op.traceStartNs : exec::traceNowNs();
  record.endNs = exec::traceNowNs();
  record.sequence = op.sequence;
  record.count = op.count;
  record.bytes = op.count * dataTypeSize(op.type);
  record.root = op.root;
  record.collective = static_cast<uint8_t>(op.collective);
  record.type = static_cast<uint8_t>(op.type);
  record.op = static_cast<uint8_t>(op.op);
  record.failed = op.state == Operation::State::kFailed;
  record.algorithm = op.plan != nullptr ? op.algorithm : std::string_view("send/recv");
  tracer_->buffer().addCall(record);
}

char* CommState::scratch(size_t bytes) {
  if (bytes <= scratchBytes_) return scratch_;
  if (scratch_ != nullptr) munmap(scratch_, scratchBytes_);
  size_t rounded = (bytes + 4095) / 4096 * 4096;
  void* memory = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    scratch_ = nullptr;
    scratchBytes_ = 0;
    throw Error(ErrorCode::kSystemError,
                fmt::format("grove: cannot map {} bytes of scratch memory on rank {}: {}", rounded,
                            rank_, strerror(errno)));
  }
  scratch_ = static_cast<char*>(memory);
  scratchBytes_ = rounded;
  return scratch_;
}

}  // namespace grove::detail
