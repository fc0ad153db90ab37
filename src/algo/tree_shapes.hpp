// Rank arithmetic of the tree-shaped algorithms, kept apart from plans and transports.
//
// Chains, binomial trees and NCCL's double binary tree are all "who is my parent, who are my
// children" questions with closed-form answers. Keeping them as pure functions of
// (nranks, root, rank) lets tests check the shapes exhaustively (every rank reached once,
// parents and children agreeing) before any plan is built, and lets several generators and
// the cost model share one definition of each tree.
#pragma once

#include <vector>

namespace grove::algo {

/// One rank's place in a tree: its parent (-1 at the root) and its children, in the order
/// the generators use them (documented per tree).
struct TreeNode {
  int parent = -1;
  std::vector<int> children;

  bool isRoot() const { return parent < 0; }
  bool isLeaf() const { return children.empty(); }
};

/// Position of `rank` counted from `root` around the ring of `nranks`: (rank - root) mod n.
int relativeRank(int nranks, int root, int rank);

/// Inverse of relativeRank: (relative + root) mod n.
int absoluteRank(int nranks, int root, int relative);

/// Binomial tree of `nranks` rooted at `root`. In relative ranks v, the parent of v > 0 is v
/// with its lowest set bit cleared, and the children of v are v + 2^j for every 2^j below
/// v's lowest set bit (every 2^j for the root) with v + 2^j < nranks; the subtree of v is the
/// contiguous range [v, v + lowbit(v)). Children are listed smallest subtree first (the
/// order a reduction hears from them; a broadcast serves them in reverse). It completes in
/// ceil(log2 nranks) rounds; its height is the largest popcount below nranks. Throws
/// grove::Error(kInvalidArgument) for bad arguments.
TreeNode binomialTreeNode(int nranks, int root, int rank);

/// ceil(log2 nranks): rounds of a binomial tree (the root's sends in sequence), 0 for one
/// rank.
int binomialTreeRounds(int nranks);

/// NCCL's in-order binary tree over ranks 0..nranks-1, rooted at rank 0. Rank 0 has the
/// single child 2^p (the largest power of two below nranks); a rank r > 0 with lowest set
/// bit b has children r - b/2 and r + b' (b' the largest of b/2, b/4, ... keeping it below
/// nranks), so odd ranks are leaves. Children are listed in that order.
TreeNode binaryTreeNode(int nranks, int rank);

/// Root of tree `tree` (0 or 1) of the double binary tree: 0 for tree 0; for tree 1,
/// nranks - 1 when nranks is even (mirror) and 1 when it is odd (shift), 0 for one rank.
int doubleBinaryTreeRoot(int nranks, int tree);

/// Rank `rank`'s node in tree `tree` (0 or 1) of NCCL's double binary tree. Tree 0 is
/// binaryTreeNode; tree 1 is its mirror r -> n-1-r when nranks is even and its shift by one
/// rank r -> r+1 when nranks is odd. Odd ranks are leaves of tree 0; tree 1's leaves are the
/// even ranks (except rank 0 when nranks is odd), so no rank is a leaf in both trees and
/// each tree's interior work lands on different ranks.
TreeNode doubleBinaryTreeNode(int nranks, int tree, int rank);

/// Number of edges on the longest root-to-leaf path of tree `tree` of the double binary
/// tree (0 for one rank).
int doubleBinaryTreeHeight(int nranks, int tree);

}  // namespace grove::algo
