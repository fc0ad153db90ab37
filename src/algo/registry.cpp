// The list of every algorithm grove knows, and lookup by name.
//
// Adding an algorithm = one file under src/algo/ + one line in makeList() below. Names are
// matched case-insensitively and through a few aliases users know from NCCL ("tree") or
// from the literature ("rd"); the alias depends on the collective, since "tree" means the
// double binary tree for allreduce but the binomial tree for broadcast and reduce.
#include <algorithm>
#include <cctype>
#include <string>

#include "algo/all.hpp"
#include "algo/names.hpp"
#include "algo/packed_trees.hpp"

namespace grove::algo {
namespace {

std::vector<Algorithm> makeList() {
  // One entry per line, grouped by collective; the order is the tie-break of selection.
  // clang-format off
  return {
      ringAllReduce(),
      recursiveDoublingAllReduce(),
      oneShotAllReduce(),
      ringAllGather(),
      recursiveDoublingAllGather(),
      ringReduceScatter(),
      pairwiseAllToAll(),
      pairwiseAllToAllv(),
      disseminationBarrier(),
      linearGather(),
      linearScatter(),
      // ---- One-sided (direct.cpp): need request.peerMemory.
      directAllReduce(),
      directReduceScatter(),
      directAllGather(),
      directBroadcast(),
      // ---- Tree algorithms (chain.cpp, binomial_tree.cpp, double_binary_tree.cpp).
      chainBroadcast(),
      binomialTreeBroadcast(),
      chainReduce(),
      binomialTreeReduce(),
      doubleBinaryTreeAllReduce(),
      // ---- End of tree algorithms.
      // ---- Topology-aware (packed_trees.cpp, packed_direct.cpp): need GROVE_TOPO_FILE.
      packedTreesBroadcast(),
      packedTreesReduce(),
      packedTreesAllReduce(),
      rsagTreesAllReduce(),
      rsagTreesAllGather(),
      rsagTreesReduceScatter(),
      oneHopAllReduce(),
      hierarchicalAllReduce(),
  };
  // clang-format on
}

}  // namespace

std::string lowerCase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::string canonicalName(plan::Collective collective, std::string_view name) {
  std::string lower = lowerCase(name);
  if (lower == "rd") return "recursive_doubling";
  if (lower == "tree") {
    if (collective == plan::Collective::kAllReduce) return "double_binary_tree";
    if (collective == plan::Collective::kBroadcast || collective == plan::Collective::kReduce) {
      return "binomial_tree";
    }
  }
  return lower;
}

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> list = makeList();
  return list;
}

const Algorithm* findAlgorithm(plan::Collective collective, std::string_view name) {
  const std::string canonical = canonicalName(collective, name);
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective == collective && algorithm.name == canonical) return &algorithm;
  }
  return nullptr;
}

}  // namespace grove::algo
