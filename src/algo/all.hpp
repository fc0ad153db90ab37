// Every algorithm grove knows, one factory per file of src/algo/. registry.cpp lists them.
#pragma once

#include "algo/registry.hpp"

namespace grove::algo {

// ring.cpp: rings for allreduce (reduce-scatter + all-gather), allgather, reducescatter.
Algorithm ringAllReduce();
Algorithm ringAllGather();
Algorithm ringReduceScatter();
// recursive_doubling.cpp: log-step exchange for small allreduce and allgather.
Algorithm recursiveDoublingAllReduce();
Algorithm recursiveDoublingAllGather();
// one_shot.cpp: everyone sends to everyone, one hop, for tiny allreduce.
Algorithm oneShotAllReduce();
// chain.cpp: pipelined chain for broadcast and reduce.
Algorithm chainBroadcast();
Algorithm chainReduce();
// binomial_tree.cpp: binomial tree for broadcast and reduce.
Algorithm binomialTreeBroadcast();
Algorithm binomialTreeReduce();
// double_binary_tree.cpp: two complementary binary trees for allreduce (NCCL's "tree").
Algorithm doubleBinaryTreeAllReduce();
// pairwise.cpp: pairwise exchange for alltoall and alltoallv.
Algorithm pairwiseAllToAll();
Algorithm pairwiseAllToAllv();
// dissemination.cpp: dissemination barrier.
Algorithm disseminationBarrier();
// linear.cpp: root talks to every rank directly, for gather and scatter.
Algorithm linearGather();
Algorithm linearScatter();
// direct.cpp: one-sided plans that read the peers' buffers in place (one host).
Algorithm directAllReduce();
Algorithm directReduceScatter();
Algorithm directAllGather();
Algorithm directBroadcast();

}  // namespace grove::algo
