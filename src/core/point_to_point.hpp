// A point-to-point batch (send, recv, or a group of them) on one rank: what the caller asked
// for, and the plan of send/recv steps it runs as (algo/point_to_point.hpp), laid over the
// caller's buffers for the executor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/point_to_point.hpp"
#include "exec/executor.hpp"
#include "transport/fifo.hpp"

namespace grove::transport {
class Transport;
}

namespace grove::detail {

/// A send or receive of `bytes` bytes with one peer.
struct Transfer {
  bool isSend = false;
  int peer = -1;
  char* buffer = nullptr;
  size_t bytes = 0;
  /// What every message of the transfer carries: send/recv, its count and type (the
  /// receiver compares the sender's with its own).
  transport::MessageTag tag;
};

class PointToPointBatch {
 public:
  /// Adds a transfer (issue order is matching order, see algo/point_to_point.hpp).
  void add(const Transfer& transfer) { transfers_.push_back(transfer); }
  /// Adds another batch's transfers after this one's (a group merges its sends and receives).
  void append(const PointToPointBatch& other) {
    transfers_.insert(transfers_.end(), other.transfers_.begin(), other.transfers_.end());
  }
  size_t size() const { return transfers_.size(); }
  void clear() { transfers_.clear(); }

  /// Builds and binds the batch's plan with pieces of at most `tileBytes`, and fills
  /// `buffers` (type, tile, views and per-piece tags) for exec::Execution. Reuses this
  /// batch's storage, and its plan and binding when the batch has the same transfers (peer,
  /// direction, bytes) as the one it last built, and the pieces' layout when the buffers and
  /// tags are the same too: the same batch issued again allocates nothing and builds nothing.
  const exec::BoundPlan& prepare(int rank, int nranks, size_t tileBytes,
                                 transport::Transport& transport, exec::CallBuffers* buffers);

 private:
  std::vector<Transfer> transfers_;
  std::vector<algo::TransferShape> shapes_;
  std::vector<algo::TransferShape> builtShapes_;  ///< What bound_ was built for.
  size_t builtTileBytes_ = 0;
  std::vector<algo::Piece> pieces_;
  std::vector<plan::Extent> extents_;  ///< Piece i's bytes, from base_.
  std::vector<transport::MessageTag> tags_;
  std::vector<Transfer> laidOut_;  ///< The transfers extents_ and tags_ were laid out for.
  uintptr_t base_ = 0;             ///< Their lowest buffer address: extents_ count from it.
  exec::BoundPlan bound_;

  /// Lays the pieces of transfers_ out over the caller's buffers: base_, extents_, tags_.
  void layOut();
};

}  // namespace grove::detail
