// Symbolic verifier: replays the plans of all ranks of one call shape and proves them,
// one-sided plans (peers' buffers read in place) included.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "plan/plan.hpp"

namespace grove::plan {

/// Options of a verification run.
struct VerifyOptions {
  /// Model the NCCL in-place form of the collective (input and output share memory, e.g.
  /// allgather's input is output block `rank`), so plans that overwrite input they still
  /// need are caught.
  bool inPlace = false;
  /// Tiles to replay; two or more exercise pipelining between tiles.
  int tiles = 2;
  /// Messages a FIFO holds before the sender blocks. One is the strictest (if a plan
  /// completes with one slot, it completes with more).
  int fifoDepth = 1;
};

/// Replays `plans` (one per rank, plans[r].rank == r, all of the same call shape) and checks:
///  * every rank ends with exactly the right contributions in every output chunk, each
///    contribution once (for reductions: all ranks' same chunk; kAvg results finalized
///    exactly once, after the last contribution);
///  * every send meets a matching recv (same chunk size class) and no message is left over;
///  * no step can wait forever (no deadlock, with FIFOs of `fifoDepth` slots);
///  * chunk, peer, lane and dependency references are in range.
///
/// The symbolic model, in detail: a chunk holds a multiset of contributions (rank, input
/// chunk); Input chunk c of rank r starts as {(r, c)}, Output and Scratch start undefined
/// (reading them is an error). ⊕ is multiset union and a contribution counted twice is an
/// error. Expected results, with k = chunksPerBlock and all(c) = {(q, c) for every rank q}:
/// allreduce out c = all(c); reducescatter out p = all(r*k+p); reduce: root's out c = all(c);
/// allgather out b*k+p = {(b, p)}; broadcast out c = {(root, c)}; alltoall(v) out b*k+p =
/// {(b, r*k+p)}; gather: root's out b*k+p = {(b, p)}; scatter out p = {(root, r*k+p)}.
/// Reduction results must be finalized by exactly one step (`finalize` on the step that
/// produces the complete value; copies keep the flag; reducing a finalized value is an error).
///
/// Barrier convention: barrier plans have outputBlocks = 1 and chunksPerBlock = 1; Output
/// chunk 0 of rank r starts as its token {(r, 0)}, ⊕ on tokens is idempotent set union, and
/// every rank must end holding a token of every rank. sendrecv plans must send and receive
/// only, and every rank must receive from each peer the pieces it sends it.
///
/// Rules a plan must also follow: block counts are per collective (allreduce, broadcast,
/// reduce: in = out = 1; allgather, gather: in = 1, out = n; reducescatter, scatter: in = n,
/// out = 1; alltoall(v): in = out = n); data-movement collectives neither reduce nor finalize;
/// no step writes Input (the caller's send buffer); operands and messages of one step are the
/// same part (chunk % k) so their sizes agree (not checked for alltoallv); a connection end
/// (direction, peer, lane) is used by one channel only; two steps of different channels that
/// touch the same chunk of the same tile, one of them writing, must be ordered through
/// `after` or messages (else a race is reported even if the replay got the right values); a
/// receive must take the message of the same tile.
///
/// One-sided plans (get, rall, signal, wait; plan.hpp). get's recvPeer is another rank, rall
/// names no peer, and neither reads Scratch (peers see only Input and Output); signal and wait
/// use peers and lanes like send and recv, their messages are empty and may not meet data
/// messages on one connection. get and rall read the peers' cells in place (in-place aliasing
/// included); rall's value is ⊕ of every rank's src in rank order. The executor runs such plans
/// between a prologue (every rank hands every other its buffer descriptors before its first
/// step) and an epilogue (every rank waits for every other to finish all its steps before it
/// returns): every rank's initial Input happens-before every step of every rank, and every
/// step happens-before any rank returns. Inside the call only messages (signal/wait included),
/// program order and `after` order steps across ranks, and a read by rank r of rank q's chunk
/// is valid only if q's last write of it (if any) happens-before the read and every later
/// write of it by q happens-after the read; both are checked whichever order the replay runs
/// them in. A copy whose src and dst are one cell (in place) is no access at all (the executor
/// skips it) unless it finalizes.
/// Returns ok, or kInvalidArgument with the first problem found in words that name the rank,
/// channel, step and chunk involved.
Status verify(const std::vector<Plan>& plans, const VerifyOptions& options = {});

}  // namespace grove::plan
