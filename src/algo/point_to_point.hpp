// Point-to-point batches as plans: a group of sends and receives becomes one rank's plan of
// kSend and kRecv steps, run by the same executor as every collective.
//
// A batch is known only to the rank that issues it (its peers issue their own halves), so
// its plan is built per call rather than selected and cached; the pieces it is built into
// are what the executor needs to lay the steps over the caller's buffers.
//
// Layout. Each transfer of B bytes is cut into ceil(B / tile) pieces of at most one tile (one
// piece when B is 0: an empty transfer still sends one message). Pieces are numbered across
// the whole batch; piece i is chunk i of Input (for a send) or of Output (for a receive), so
// every step moves exactly one message and the plan is in bytes (the call's type is uint8).
//
// Order. MPI and NCCL match the messages of two ranks in issue order, whether they were
// grouped or not, so a rank's transfers with one peer in one direction must go one after the
// other, each whole before the next starts: they share one channel, which runs its pieces in
// order. Transfers with different peers, or sends and receives with the same peer, go in
// different channels and progress concurrently (a ring exchange cannot deadlock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "plan/plan.hpp"

namespace grove::algo {

/// The name point-to-point plans carry (Plan::algorithm).
inline constexpr std::string_view kPointToPointName = "sendrecv";

/// One send or receive of a batch, as the plan sees it.
struct TransferShape {
  bool isSend = false;
  int peer = -1;
  size_t bytes = 0;

  friend bool operator==(const TransferShape&, const TransferShape&) = default;
};

/// What chunk i of a point-to-point plan is: bytes [offset, offset + bytes) of transfer
/// `transfer` of the batch.
struct Piece {
  uint32_t transfer = 0;
  size_t offset = 0;
  size_t bytes = 0;
};

/// Builds rank `rank`'s plan for `transfers` (in issue order) with pieces of at most
/// `tileBytes` (> 0) bytes, into `plan` and `pieces`, reusing their storage: a communicator
/// that issues the same batches again allocates nothing.
void buildPointToPoint(int rank, int nranks, std::span<const TransferShape> transfers,
                       size_t tileBytes, plan::Plan* plan, std::vector<Piece>* pieces);

}  // namespace grove::algo
