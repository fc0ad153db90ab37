// The verifier's static half: the symbolic model's rules per collective (expected results,
// in-place aliasing) and every check that needs no replay.
//
// Structure is checked before anything runs so that the replay can index buffers, FIFOs
// and dependencies without guarding each access, and so that a malformed plan gets a message
// about the malformed field rather than a confusing symptom later (a deadlock, a wrong sum).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "plan/printer.hpp"
#include "plan/verifier_model.hpp"

namespace grove::plan::verifier_model {
namespace {

/// A structural problem: the plans are the verifier's input.
Status invalid(std::string problem) {
  return Status::failure(ErrorCode::kInvalidArgument, std::move(problem));
}

// Upper bound on ranks × chunks × tiles states the replay allocates.
constexpr uint64_t kMaxStates = uint64_t{1} << 22;

const char* bufferName(BufferKind buffer) {
  switch (buffer) {
    case BufferKind::kInput:
      return "in";
    case BufferKind::kOutput:
      return "out";
    case BufferKind::kScratch:
      return "scratch";
  }
  return "?";
}

std::vector<Contribution> allRanks(int nranks, uint32_t chunk) {
  std::vector<Contribution> items;
  items.reserve(static_cast<size_t>(nranks));
  for (int q = 0; q < nranks; ++q) items.push_back(contribution(static_cast<uint32_t>(q), chunk));
  return items;
}

// Expected blocks {input, output} per rank for n ranks; input -1 means "any".
std::pair<int64_t, int64_t> expectedBlocks(Collective collective, int64_t n) {
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
      return {1, 1};
    case Collective::kAllGather:
    case Collective::kGather:
      return {1, n};
    case Collective::kReduceScatter:
    case Collective::kScatter:
      return {n, 1};
    case Collective::kAllToAll:
    case Collective::kAllToAllv:
      return {n, n};
    case Collective::kBarrier:
    case Collective::kSendRecv:
      return {-1, 1};
  }
  return {-1, -1};
}

Status checkAgreement(const std::vector<Plan>& plans) {
  const Plan& first = plans[0];
  const int n = static_cast<int>(plans.size());
  for (int r = 0; r < n; ++r) {
    const Plan& p = plans[static_cast<size_t>(r)];
    if (p.rank != r) {
      return invalid(
          fmt::format("plans[{}].rank is {}, expected {}: pass one plan per rank, in rank order", r,
                      p.rank, r));
    }
    if (p.nranks != n) {
      return invalid(fmt::format("rank {}: nranks is {}, but {} plans were given", r, p.nranks, n));
    }
    auto differ = [&](const char* field, auto mine, auto theirs) {
      return fmt::format(
          "rank {}: {} is {}, but rank 0's is {}; all plans must describe the "
          "same call shape",
          r, field, mine, theirs);
    };
    if (p.collective != first.collective) {
      return invalid(differ("collective", toString(p.collective), toString(first.collective)));
    }
    if (p.root != first.root) return invalid(differ("root", p.root, first.root));
    if (p.chunksPerBlock != first.chunksPerBlock) {
      return invalid(differ("chunksPerBlock", p.chunksPerBlock, first.chunksPerBlock));
    }
    // A point-to-point batch is each rank's own: its pieces differ from rank to rank.
    if (p.collective == Collective::kSendRecv) continue;
    if (p.inputBlocks != first.inputBlocks) {
      return invalid(differ("inputBlocks", p.inputBlocks, first.inputBlocks));
    }
    if (p.outputBlocks != first.outputBlocks) {
      return invalid(differ("outputBlocks", p.outputBlocks, first.outputBlocks));
    }
    if (p.scratchBlocks != first.scratchBlocks) {
      return invalid(differ("scratchBlocks", p.scratchBlocks, first.scratchBlocks));
    }
  }
  return {};
}

Status checkShape(const Plan& p, const VerifyOptions& options) {
  const int64_t n = p.nranks;
  const char* name = toString(p.collective);
  if (rooted(p.collective) && (p.root < 0 || p.root >= n)) {
    return invalid(
        fmt::format("root {} is not a rank in [0, {}); {} needs a root", p.root, n, name));
  }
  if (p.chunksPerBlock < 1) return invalid("chunksPerBlock is 0, expected at least 1");
  auto [in, out] = expectedBlocks(p.collective, n);
  if (in >= 0 && p.inputBlocks != in) {
    return invalid(fmt::format("{} plans need inputBlocks = {} for {} ranks, found {}", name, in, n,
                               p.inputBlocks));
  }
  if (p.collective != Collective::kSendRecv && p.outputBlocks != out) {
    return invalid(fmt::format("{} plans need outputBlocks = {} for {} ranks, found {}", name, out,
                               n, p.outputBlocks));
  }
  if (p.collective == Collective::kBarrier && p.chunksPerBlock != 1) {
    return invalid(fmt::format("barrier plans need chunksPerBlock = 1 (one token chunk), found {}",
                               p.chunksPerBlock));
  }
  const uint64_t k = p.chunksPerBlock;
  const uint64_t chunks = (uint64_t{p.inputBlocks} + p.outputBlocks + p.scratchBlocks) * k;
  const uint64_t states = chunks * static_cast<uint64_t>(n) * static_cast<uint64_t>(options.tiles);
  if (uint64_t{p.inputBlocks} * k > UINT32_MAX || uint64_t{p.outputBlocks} * k > UINT32_MAX ||
      uint64_t{p.scratchBlocks} * k > UINT32_MAX || states > kMaxStates) {
    return invalid(
        fmt::format("too large to verify: {} ranks x {} chunks x {} tiles exceeds {} chunk "
                    "states; use fewer tiles or fewer chunks per block",
                    n, chunks, options.tiles, kMaxStates));
  }
  return {};
}

Status checkOperand(const Plan& p, const ChunkRef& ref, const char* role) {
  if (static_cast<int>(ref.buffer) > static_cast<int>(BufferKind::kScratch)) {
    return invalid(
        fmt::format("{} buffer {} is not a buffer kind", role, static_cast<int>(ref.buffer)));
  }
  const uint32_t chunks = p.chunks(ref.buffer);
  if (ref.chunk >= chunks) {
    return invalid(fmt::format("{} {}[{}] is out of range: {} has {} chunks", role,
                               bufferName(ref.buffer), ref.chunk, bufferName(ref.buffer), chunks));
  }
  return {};
}

Status checkPeer(const Plan& p, int32_t peer, const char* role) {
  if (peer < 0 || peer >= p.nranks) {
    return invalid(fmt::format("{} {} is not a rank in [0, {})", role, peer, p.nranks));
  }
  // A group may send to its own rank (the matching receive is in the same group).
  if (peer == p.rank && p.collective != Collective::kSendRecv) {
    return invalid(fmt::format(
        "{} {} is the step's own rank; a rank does not message itself (use copy)", role, peer));
  }
  return {};
}

Status checkStep(const Plan& p, size_t c, size_t s) {
  const Step& step = p.channels[c].steps[s];
  if (static_cast<int>(step.op) >= kOpKindCount) {
    return invalid(fmt::format("op {} is not a step kind", static_cast<int>(step.op)));
  }
  Status error;
  if (p.collective == Collective::kSendRecv && step.op != OpKind::kSend &&
      step.op != OpKind::kRecv) {
    return invalid(
        fmt::format("'{}' in a sendrecv plan, which only sends and receives", toString(step.op)));
  }
  if (isDataMovement(p.collective) && reduces(step.op)) {
    return invalid(fmt::format("'{}' reduces, but {} only moves data", toString(step.op),
                               toString(p.collective)));
  }
  if (isDataMovement(p.collective) && step.finalize) {
    return invalid(
        fmt::format("finalize is set, but {} only moves data (there is nothing to finalize)",
                    toString(p.collective)));
  }
  if (!(error = checkOneSidedStep(p, step)).ok()) return error;
  if (receives(step.op) && !(error = checkPeer(p, step.recvPeer, "recvPeer")).ok()) {
    return error;
  }
  if (sends(step.op) && !(error = checkPeer(p, step.sendPeer, "sendPeer")).ok()) return error;
  if (readsSrc(step.op) && !(error = checkOperand(p, step.src, "src")).ok()) return error;
  if (writesDst(step.op)) {
    if (!(error = checkOperand(p, step.dst, "dst")).ok()) return error;
    if (step.dst.buffer == BufferKind::kInput) {
      return invalid(
          fmt::format("dst in[{}] writes the input buffer, which is the caller's read-only "
                      "send buffer",
                      step.dst.chunk));
    }
  }
  const uint32_t k = p.chunksPerBlock;
  if (p.collective != Collective::kAllToAllv && readsSrc(step.op) && writesDst(step.op) &&
      step.src.chunk % k != step.dst.chunk % k) {
    return invalid(
        fmt::format("src {}[{}] is part {} of its block but dst {}[{}] is part {}: parts "
                    "differ in size",
                    bufferName(step.src.buffer), step.src.chunk, step.src.chunk % k,
                    bufferName(step.dst.buffer), step.dst.chunk, step.dst.chunk % k));
  }
  const StepRef& after = step.after;
  if (after.channel == -1) return {};
  if (after.channel < -1 || static_cast<size_t>(after.channel) >= p.channels.size()) {
    return invalid(
        fmt::format("after.channel {} does not exist (the plan has {} channels; -1 = none)",
                    after.channel, p.channels.size()));
  }
  const size_t length = p.channels[static_cast<size_t>(after.channel)].steps.size();
  if (after.step < 0 || static_cast<size_t>(after.step) >= length) {
    return invalid(fmt::format("after.step {} does not exist (channel {} has {} steps)", after.step,
                               after.channel, length));
  }
  if (static_cast<size_t>(after.channel) == c && static_cast<size_t>(after.step) >= s) {
    return invalid(fmt::format("after names step {} of its own channel, which cannot run before it",
                               after.step));
  }
  return {};
}

// A connection end (direction, peer, lane) must belong to one channel, otherwise which
// channel gets which message depends on timing.
Status checkConnections(const Plan& p) {
  std::map<std::tuple<bool, int32_t, uint16_t>, size_t> owner;
  for (size_t c = 0; c < p.channels.size(); ++c) {
    for (const Step& step : p.channels[c].steps) {
      for (bool sending : {false, true}) {
        if (sending ? !sends(step.op) : !receives(step.op)) continue;
        const int32_t peer = sending ? step.sendPeer : step.recvPeer;
        auto [it, added] = owner.try_emplace({sending, peer, step.lane}, c);
        if (!added && it->second != c) {
          return invalid(fmt::format(
              "rank {}: channels {} and {} both {} rank {} on lane {}; a "
              "connection belongs to one channel, give them different lanes",
              p.rank, it->second, c, sending ? "send to" : "receive from", peer, step.lane));
        }
      }
    }
  }
  return {};
}

}  // namespace

std::string describe(const std::vector<Contribution>& items, size_t limit) {
  std::string text = "{";
  for (size_t i = 0; i < items.size() && i < limit; ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("({},{})", contributorRank(items[i]), contributorChunk(items[i]));
  }
  if (items.size() > limit) text += fmt::format(", ... ({} in all)", items.size());
  return text + "}";
}

std::string chunkName(const ChunkRef& ref) {
  return fmt::format("{}[{}]", bufferName(ref.buffer), ref.chunk);
}

bool isDataMovement(Collective collective) {
  return !reduces(collective) && collective != Collective::kBarrier &&
         collective != Collective::kSendRecv;
}

Expectation expectedOutput(const Plan& plan, uint32_t chunk) {
  const uint32_t k = plan.chunksPerBlock;
  const auto r = static_cast<uint32_t>(plan.rank);
  const auto root = static_cast<uint32_t>(plan.root);
  const uint32_t block = chunk / k;
  const uint32_t part = chunk % k;
  const bool isRoot = plan.rank == plan.root;
  using Kind = Expectation::Kind;
  switch (plan.collective) {
    case Collective::kAllReduce:
      return {Kind::kExact, allRanks(plan.nranks, chunk), true};
    case Collective::kReduceScatter:
      return {Kind::kExact, allRanks(plan.nranks, r * k + chunk), true};
    case Collective::kReduce:
      if (!isRoot) return {};
      return {Kind::kExact, allRanks(plan.nranks, chunk), true};
    case Collective::kAllGather:
      return {Kind::kExact, {contribution(block, part)}, false};
    case Collective::kBroadcast:
      return {Kind::kExact, {contribution(root, chunk)}, false};
    case Collective::kAllToAll:
    case Collective::kAllToAllv:
      return {Kind::kExact, {contribution(block, r * k + part)}, false};
    case Collective::kGather:
      if (!isRoot) return {};
      return {Kind::kExact, {contribution(block, part)}, false};
    case Collective::kScatter:
      return {Kind::kExact, {contribution(root, r * k + chunk)}, false};
    case Collective::kBarrier:
      return {Kind::kEveryRank, {}, false};
    case Collective::kSendRecv:
      return {};
  }
  return {};
}

int64_t aliasedInput(const Plan& plan, uint32_t chunk) {
  const int64_t k = plan.chunksPerBlock;
  const int64_t r = plan.rank;
  const int64_t root = plan.root;
  const bool isRoot = plan.rank == plan.root;
  switch (plan.collective) {
    case Collective::kAllReduce:
      return chunk;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return isRoot ? chunk : -1;
    case Collective::kAllGather:
      return chunk / k == r ? chunk % k : -1;
    case Collective::kReduceScatter:
      return r * k + chunk;
    case Collective::kGather:
      return isRoot && chunk / k == root ? chunk % k : -1;
    case Collective::kScatter:
      return isRoot ? root * k + chunk : -1;
    default:
      return -1;
  }
}

Status checkStructure(const std::vector<Plan>& plans, const VerifyOptions& options) {
  if (plans.empty()) return invalid("no plans to verify: pass one plan per rank");
  if (options.tiles < 1 || options.tiles > kMaxTiles) {
    return invalid(
        fmt::format("VerifyOptions::tiles is {}, expected 1..{}", options.tiles, kMaxTiles));
  }
  if (options.fifoDepth < 1) {
    return invalid(
        fmt::format("VerifyOptions::fifoDepth is {}, expected at least 1", options.fifoDepth));
  }
  const Collective collective = plans[0].collective;
  if (static_cast<int>(collective) >= kCollectiveCount) {
    return invalid(
        fmt::format("rank 0: collective {} is not a collective", static_cast<int>(collective)));
  }
  if (Status error = checkAgreement(plans); !error.ok()) return error;
  if (Status error = checkOneSidedAgreement(plans); !error.ok()) return error;
  if (Status error = checkShape(plans[0], options); !error.ok()) return error;
  for (const Plan& p : plans) {
    for (size_t c = 0; c < p.channels.size(); ++c) {
      for (size_t s = 0; s < p.channels[c].steps.size(); ++s) {
        if (Status error = checkStep(p, c, s); !error.ok()) {
          return invalid(fmt::format("rank {} channel {} step {} ({}): {}", p.rank, c, s,
                                     toText(p.channels[c].steps[s]), error.message()));
        }
      }
    }
    if (Status error = checkConnections(p); !error.ok()) return error;
  }
  return {};
}

}  // namespace grove::plan::verifier_model
