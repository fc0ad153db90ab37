// The verifier's symbolic model, shared by its structure checks (verifier_checks.cpp) and its
// replay (verifier.cpp): what a chunk holds, what each collective must end with, and which
// chunks alias in place. Internal to src/plan.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "plan/verifier.hpp"

namespace grove::plan::verifier_model {

/// Input chunk `chunk` of rank `rank`, packed so that values sort and compare as integers.
using Contribution = uint64_t;

inline Contribution contribution(uint32_t rank, uint32_t chunk) {
  return (static_cast<uint64_t>(rank) << 32) | chunk;
}
inline uint32_t contributorRank(Contribution c) { return static_cast<uint32_t>(c >> 32); }
inline uint32_t contributorChunk(Contribution c) { return static_cast<uint32_t>(c); }

/// What one chunk (of one tile) holds: undefined, or a sorted multiset of contributions,
/// plus whether the operator's final transform has been applied.
struct Value {
  bool defined = false;
  bool finalized = false;
  std::vector<Contribution> items;
};

/// "{(0,1), (2,1)}", at most `limit` items then "... (N in all)".
std::string describe(const std::vector<Contribution>& items, size_t limit = 8);

/// "in[3]", "out[0]", "scratch[2]": a chunk as plans are printed.
std::string chunkName(const ChunkRef& ref);

/// allreduce, reduce, reducescatter: ⊕ must count every contribution once.
bool isReduction(Collective collective);
/// broadcast, allgather, alltoall(v), gather, scatter: no step may reduce or finalize.
bool isDataMovement(Collective collective);

/// What the verifier demands of one output chunk at the end.
struct Expectation {
  enum class Kind : uint8_t {
    kUnchecked,  ///< Not part of the result (non-root output of reduce and gather).
    kExact,      ///< Exactly `items`, each once.
    kEveryRank,  ///< Barrier: some token of every rank (as a set).
  };
  Kind kind = Kind::kUnchecked;
  std::vector<Contribution> items;
  bool finalized = false;  ///< Must carry the finalized flag (reductions).
};

/// The expected final content of output chunk `chunk` of `plan`'s rank.
Expectation expectedOutput(const Plan& plan, uint32_t chunk);

/// The expected final content of every output chunk of sendrecv plans (indexed by rank,
/// then chunk), which depends on every rank's batch; fails when two ranks' batches do not
/// pair up (one sends more pieces than the other receives).
Status pointToPointExpectations(const std::vector<Plan>& plans,
                                std::vector<std::vector<Expectation>>* expectations);

/// In place, the input chunk that output chunk `chunk` of `plan`'s rank shares storage with,
/// or -1 when it has its own.
int64_t aliasedInput(const Plan& plan, uint32_t chunk);

/// Everything that can be checked without replaying: option ranges, agreement between
/// plans, buffer shapes, and every step's kinds, peers, chunks, lanes and dependencies.
/// Returns the first problem (kInvalidArgument), or ok.
Status checkStructure(const std::vector<Plan>& plans, const VerifyOptions& options);

/// The one-sided kinds' own rules (verifier_one_sided.cpp): get reads another rank in range,
/// rall names no peer, and neither reads Scratch (peers see only Input and Output).
Status checkOneSidedStep(const Plan& plan, const Step& step);
/// Every rank's plan agrees on Plan::oneSided, and a plan with one-sided steps has it set.
Status checkOneSidedAgreement(const std::vector<Plan>& plans);

/// The largest number of tiles the verifier replays.
inline constexpr int kMaxTiles = 1024;

}  // namespace grove::plan::verifier_model
