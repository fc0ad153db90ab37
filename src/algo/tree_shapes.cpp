// Closed-form parents and children of the chain, binomial and double binary trees; see
// tree_shapes.hpp for the shapes and why they are kept as pure functions.
#include "algo/tree_shapes.hpp"

#include <algorithm>
#include <string>

#include "grove/error.hpp"

namespace grove::algo {
namespace {

void checkRank(const char* what, int nranks, int rank) {
  if (nranks < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": nranks is " + std::to_string(nranks) + ", expected >= 1");
  }
  if (rank < 0 || rank >= nranks) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": rank " + std::to_string(rank) +
                                                 " is outside [0, " + std::to_string(nranks) + ")");
  }
}

void checkTree(int tree) {
  if (tree != 0 && tree != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "doubleBinaryTree: tree is " + std::to_string(tree) + ", expected 0 or 1");
  }
}

int lowestBit(int value) { return value & -value; }

/// Rank of tree 0 that plays `rank`'s part in tree `tree`, and back.
int toTreeZero(int nranks, int tree, int rank) {
  if (tree == 0) return rank;
  return nranks % 2 == 0 ? nranks - 1 - rank : (rank - 1 + nranks) % nranks;
}

int fromTreeZero(int nranks, int tree, int rank) {
  if (tree == 0 || rank < 0) return rank;
  return nranks % 2 == 0 ? nranks - 1 - rank : (rank + 1) % nranks;
}

}  // namespace

int relativeRank(int nranks, int root, int rank) {
  checkRank("relativeRank", nranks, rank);
  checkRank("relativeRank (root)", nranks, root);
  return (rank - root + nranks) % nranks;
}

int absoluteRank(int nranks, int root, int relative) {
  checkRank("absoluteRank", nranks, relative);
  checkRank("absoluteRank (root)", nranks, root);
  return (relative + root) % nranks;
}

TreeNode binomialTreeNode(int nranks, int root, int rank) {
  const int v = relativeRank(nranks, root, rank);
  TreeNode node;
  if (v != 0) node.parent = absoluteRank(nranks, root, v & (v - 1));
  // The root may add any power of two; others only those below their lowest set bit.
  const int limit = v == 0 ? nranks : lowestBit(v);
  for (int mask = 1; mask < limit && v + mask < nranks; mask <<= 1) {
    node.children.push_back(absoluteRank(nranks, root, v + mask));
  }
  return node;
}

int binomialTreeRounds(int nranks) {
  int depth = 0;
  while ((1 << depth) < nranks) ++depth;
  return depth;
}

TreeNode binaryTreeNode(int nranks, int rank) {
  checkRank("binaryTreeNode", nranks, rank);
  TreeNode node;
  if (rank == 0) {
    int bit = 1;
    while (bit < nranks) bit <<= 1;
    if (nranks > 1) node.children.push_back(bit >> 1);
    return node;
  }
  const int bit = lowestBit(rank);
  int up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  node.parent = up;
  int half = bit >> 1;
  if (half == 0) return node;
  node.children.push_back(rank - half);
  while (half > 0 && rank + half >= nranks) half >>= 1;
  if (half > 0) node.children.push_back(rank + half);
  return node;
}

int doubleBinaryTreeRoot(int nranks, int tree) {
  checkTree(tree);
  checkRank("doubleBinaryTreeRoot", nranks, 0);
  return fromTreeZero(nranks, tree, 0);
}

TreeNode doubleBinaryTreeNode(int nranks, int tree, int rank) {
  checkTree(tree);
  checkRank("doubleBinaryTreeNode", nranks, rank);
  TreeNode base = binaryTreeNode(nranks, toTreeZero(nranks, tree, rank));
  TreeNode node;
  node.parent = fromTreeZero(nranks, tree, base.parent);
  for (int child : base.children) node.children.push_back(fromTreeZero(nranks, tree, child));
  return node;
}

int doubleBinaryTreeHeight(int nranks, int tree) {
  checkTree(tree);
  checkRank("doubleBinaryTreeHeight", nranks, 0);
  // Tree 1 is a relabelling of tree 0, so both have the same height.
  int height = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    int depth = 0;
    for (int r = rank; r != 0; r = binaryTreeNode(nranks, r).parent) ++depth;
    height = std::max(height, depth);
  }
  return height;
}

}  // namespace grove::algo
