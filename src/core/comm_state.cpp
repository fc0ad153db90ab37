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
#include "core/collective_call.hpp"
#include "core/comm_topology.hpp"
#include "core/link_compression.hpp"
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
  codec_ = makeLinkCodec(config_, *transport_, topology_.get());
}

CommState::~CommState() {
  failQueued(ErrorCode::kInvalidUsage, "the communicator was destroyed");
  if (codec_) logLinkCodecStats(rank_, *codec_);
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
  SelectionKey key{static_cast<int>(request.collective),
                   request.count,
                   static_cast<int>(request.type),
                   static_cast<int>(request.op),
                   request.root,
                   request.peerMemory,
                   std::string(forced)};
  auto found = selections_.find(key);
  if (found != selections_.end()) return *found->second;
  algo::CostParams params;
  params.tileBytes = static_cast<double>(config_.slotBytes);
  params.fifoDepth = static_cast<double>(config_.fifoDepth);
  algo::Selection selection = algo::select(request, forced, config_.algo, params);
  log::info(rank_, "{} count {} {}: {}", plan::toString(request.collective), request.count,
            toString(request.type), selection.reason);
  if (codec_ != nullptr && log::enabled(log::Level::kInfo)) {
    logCompressionGain(rank_, *codec_, *selection.algorithm, request, params);
  }
  if (selections_.size() > 4096) selections_.clear();
  selections_.emplace(std::move(key), selection.algorithm);
  return *selection.algorithm;
}

const exec::BoundPlan& CommState::boundPlan(const algo::Algorithm& algorithm,
                                            const plan::PlanRequest& asked) {
  plan::PlanRequest request = asked;
  request.topology = topology_.get();
  const uint32_t variant = algorithm.planVariant != nullptr ? algorithm.planVariant(request) : 0;
  auto key = std::make_tuple(&algorithm, request.root, variant);
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
    if (op->isPointToPoint()) {
      for (auto& held : grouped_) {
        if (held->isPointToPoint()) {  // merge into the group's point-to-point batch
          held->batch.append(op->batch);
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
  if (op.fallback.plan != nullptr && oneSidedCallsToSkip_ > 0) {
    // A recent one-sided call was declined: skip the hellos for a while (see advance).
    --oneSidedCallsToSkip_;
    runFallback(op);
    return;
  }
  if (op.plan != nullptr && op.plan->oneSided) {
    op.buffers.staging = scratch(exec::OneSided::stagingBytes());
  }
  startPlan(op);
}

void CommState::runFallback(Operation& op) {
  const Operation::Fallback fallback = std::exchange(op.fallback, {});
  GROVE_ENFORCE(fallback.plan != nullptr && !fallback.plan->oneSided, "operation", op.sequence,
                "has no fallback plan");
  usePlan(op, *fallback.plan, fallback.algorithm, fallback.tileElems);
  startPlan(op);
}

void CommState::startPlan(Operation& op) {
  if (op.isPointToPoint()) {
    op.buffers.checksum = config_.checksum;
    op.buffers.faultDelay = config_.faultDelay;
    op.plan = &op.batch.prepare(rank_, size_, config_.slotBytes, *transport_, &op.buffers);
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
  op.buffers.codec = codec_.get();
  op.execution.start(*op.plan, op.buffers);
}

exec::Progress CommState::advance(Operation& op) {
  if (!op.started) start(op);
  exec::Progress progress = op.execution.advance();
  if (progress == exec::Progress::kFailed) {
    op.message = op.execution.error();
    op.error = op.execution.errorCode();
    return progress;
  }
  if (progress == exec::Progress::kDone && op.execution.declined()) {
    // Every rank saw the same hellos and declines alike: run the fallback plan.
    if (!oneSidedDeclineLogged_) {
      log::info(rank_, "{} declined: {}; it runs {} (logged once)", op.describe(),
                op.execution.declineReason(), op.fallback.algorithm);
      oneSidedDeclineLogged_ = true;
    }
    // The next calls would most likely decline too (the same buffers, the same peers), and
    // each decline costs a round of hellos: run the fallback directly for the next
    // kOneSidedCallsSkippedAfterDecline calls that have one, then ask again. Operations start
    // in the same order on every rank and every rank declined this one, so every rank skips
    // the same calls.
    oneSidedCallsToSkip_ = kOneSidedCallsSkippedAfterDecline;
    runFallback(op);
    return advance(op);
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
      if (!op.isPointToPoint() && !op.signatureCheck) lastAlgorithm_ = op.algorithm;
      if (tracer_ != nullptr) traceCall(op);
      queue_.pop_front();
      moved = true;
      continue;
    }
    moved = moved || progress == exec::Progress::kMoved;
    break;
  }
  // The transport's latency path: what the steps above committed leaves now, and what peers
  // sent is read on this thread rather than handed over by another (Transport::progress).
  if (transport_->progress() && !moved) moved = !queue_.empty();
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
  record.shape = op.shape;
  record.failed = op.state == Operation::State::kFailed;
  record.algorithm = !op.isPointToPoint() ? op.algorithm : std::string_view("send/recv");
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
