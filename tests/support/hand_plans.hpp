// A rank's plan of a given layout with one empty channel, for tests that write steps by hand.
#pragma once

#include <cstdint>

#include "plan/plan.hpp"

namespace grove::testing {

/// Rank `r` of `n`'s plan of `collective` (algorithm "test") with `k` chunks per block, the
/// given block counts, root, and Plan::oneSided = `oneSided`; one channel without steps.
inline plan::Plan handPlan(plan::Collective collective, int r, int n, uint32_t k, uint32_t inBlocks,
                           uint32_t outBlocks, uint32_t scratchBlocks = 0, int root = -1,
                           bool oneSided = false) {
  plan::Plan p;
  p.collective = collective;
  p.algorithm = "test";
  p.rank = r;
  p.nranks = n;
  p.root = root;
  p.chunksPerBlock = k;
  p.inputBlocks = inBlocks;
  p.outputBlocks = outBlocks;
  p.scratchBlocks = scratchBlocks;
  p.oneSided = oneSided;
  p.channels.emplace_back();
  return p;
}

}  // namespace grove::testing
