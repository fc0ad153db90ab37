// Plans over packed trees: how a set of weighted trees becomes channels of steps.
//
// The packer (packing.hpp) says which trees to use and at what rate; this part turns them
// into one rank's plan, independently of how the trees were found, so that tests can feed
// it trees built by hand. Data is split across the trees in proportion to their rates: a
// block has k chunks and each tree owns a contiguous run of them (largest-remainder
// rounding, every tree at least one chunk). Each tree gets its own channels and lanes, so
// trees never share a FIFO and run concurrently; the executor pipelines each tree over
// tiles. The step shapes per tree are those of binomial_tree.cpp and double_binary_tree.cpp,
// for a tree of arbitrary shape:
//  * down (broadcast, all-gather): the root sends to every child (deepest subtree first);
//    an inner rank receives, stores and forwards in one recvCopySend, then sends to its
//    other children; a leaf receives.
//  * up (reduce, reduce-scatter): a leaf sends its input; a rank with one child adds its
//    input to the child's partial and forwards it; a rank with several children
//    accumulates them (in Output for allreduce, else in Scratch) and forwards with the last;
//    the root accumulates into its output and finalizes with the last child.
//  * allreduce = up then down on the same tree (two channels; the root's first down step
//    waits for its last up step of the same chunk and tile). RS+AG allreduce is the same
//    with one family of trees per root, each owning that root's shard of the block.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "algo/packing.hpp"
#include "plan/plan.hpp"

namespace grove::algo {

/// A tree and the run of parts [first, first + count) of each block it carries.
struct TreeRun {
  const Tree* tree = nullptr;
  uint32_t first = 0;
  uint32_t count = 0;
};

/// Chunks per block for trees of these rates: when every rate is exact and the shares
/// rate / total have a common denominator of at most kMaxExactChunks, that denominator (so
/// the shares are exact); otherwise max(kDefaultChunks, trees). Throws
/// grove::Error(kInvalidArgument) when `trees` is empty.
uint32_t chunksForTrees(const std::vector<Tree>& trees);

inline constexpr uint32_t kMaxExactChunks = 64;
inline constexpr uint32_t kDefaultChunks = 60;
/// The smallest chunk a plan splits data into when it has fewer bytes than `k` chunks of
/// this size (chunksForBytes). Every chunk is a message on every edge of its tree, and a
/// message costs a few microseconds whatever its size (6-7 us one way over TCP between
/// emulated hosts, about 0.6 us through shared memory on 2 cores), so splitting 4 KiB into
/// 60 chunks of 20 bytes made a 4-rank allreduce 600 steps per rank: 4.5 ms over TCP where
/// one chunk per root takes 0.2 ms. From 16 KiB a chunk's transfer outweighs its cost on
/// links up to about 10 Gbit/s.
inline constexpr size_t kMinChunkBytes = 16 << 10;

/// Chunks for `bytes` of data that `exact` chunks would share out exactly: `exact` when each
/// chunk keeps at least kMinChunkBytes, else as many as do (at least 1). Fewer chunks than
/// trees leave the slowest trees empty, which at such sizes costs nothing: latency decides.
uint32_t chunksForBytes(uint32_t exact, double bytes);

/// The most chunks a packing may ask for (`exact` of chunksForBytes), and so the class of
/// sizes from which every size gets the packing's own chunks.
inline constexpr uint32_t kMaxPackingChunks = 4096;

/// A name for the chunk count chunksForBytes(exact, bytes) gives for every exact <=
/// kMaxPackingChunks: how many kMinChunkBytes `bytes` holds, 1..kMaxPackingChunks. Equal
/// classes mean equal chunk counts (Algorithm::planVariant).
uint32_t chunkClass(double bytes);

/// Chunk counts of `k` in proportion to the trees' rates (largest remainder, ties to the
/// lower index; every tree at least one chunk when k >= trees). Sum is k.
std::vector<uint32_t> shareChunks(const std::vector<Tree>& trees, uint32_t k);

/// The runs of one packing over parts [0, k): tree i owns shareChunks(...)[i] parts, in
/// order. `k` as chunksForTrees gives it, unless the caller needs another.
std::vector<TreeRun> runsOf(const Packing& packing, uint32_t k);

/// Builds request.rank's plan of `request.collective` (broadcast, reduce, allreduce,
/// allgather, reducescatter) over `runs` with `k` chunks per block. For broadcast and reduce
/// every tree must be rooted at request.root; for allgather and reducescatter tree runs
/// rooted at b carry block b's parts (runs of every root together must cover [0, k) for
/// each root); for allreduce the runs together must cover [0, k) once. Every tree spans
/// ranks 0..nranks-1. Channels: per run, one up channel and/or one down channel, lane =
/// channel index. Throws grove::Error(kInvalidArgument) for other collectives or trees that
/// do not span the ranks.
plan::Plan buildTreePlan(const plan::PlanRequest& request, std::string_view algorithm, uint32_t k,
                         const std::vector<TreeRun>& runs);

/// Longest root-to-leaf path of `tree` in tree edges.
int treeDepth(const Tree& tree);

}  // namespace grove::algo
