#include "core/point_to_point.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace grove::detail {

using transport::MessageTag;

void PointToPointBatch::layOut() {
  // The caller's buffers are separate allocations; the executor addresses chunks as offsets
  // from one base, so pieces are laid out from the lowest buffer address of the batch (in
  // integers: the pointers are never offset outside their own buffers).
  uintptr_t base = UINTPTR_MAX;
  for (const Transfer& t : transfers_) {
    if (t.buffer != nullptr) base = std::min(base, reinterpret_cast<uintptr_t>(t.buffer));
  }
  base_ = base == UINTPTR_MAX ? 0 : base;
  extents_.clear();
  tags_.clear();
  for (const algo::Piece& piece : pieces_) {
    const Transfer& t = transfers_[piece.transfer];
    const uintptr_t at = t.buffer != nullptr ? reinterpret_cast<uintptr_t>(t.buffer) - base_ : 0;
    extents_.push_back({static_cast<size_t>(at) + piece.offset, piece.bytes});
    tags_.push_back(t.tag);
  }
  laidOut_ = transfers_;
}

const exec::BoundPlan& PointToPointBatch::prepare(int rank, int nranks, size_t tileBytes,
                                                  transport::Transport& transport,
                                                  exec::CallBuffers* buffers) {
  // A loop that issues the same batch again (a halo exchange, a pipeline stage) reuses its
  // plan and binding: only the buffers and tags below change from call to call.
  bool same = transfers_.size() == builtShapes_.size() && tileBytes == builtTileBytes_ &&
              bound_.plan.nranks == nranks;
  for (size_t i = 0; same && i < transfers_.size(); ++i) {
    const Transfer& t = transfers_[i];
    same = builtShapes_[i] == algo::TransferShape{t.isSend, t.peer, t.bytes};
  }
  if (!same) {
    shapes_.clear();
    for (const Transfer& t : transfers_) shapes_.push_back({t.isSend, t.peer, t.bytes});
    algo::buildPointToPoint(rank, nranks, shapes_, tileBytes, &bound_.plan, &pieces_);
    bound_.rebind(transport);
    builtShapes_ = shapes_;
    builtTileBytes_ = tileBytes;
  }

  // The pieces' places and tags, unless they are those of the last call: the same plan
  // over the same buffers with the same tags (a loop reusing its buffers) keeps them.
  bool sameLayout = same && laidOut_.size() == transfers_.size();
  for (size_t i = 0; sameLayout && i < transfers_.size(); ++i) {
    sameLayout = laidOut_[i].buffer == transfers_[i].buffer &&
                 std::memcmp(&laidOut_[i].tag, &transfers_[i].tag, sizeof(MessageTag)) == 0;
  }
  if (!sameLayout) layOut();
  const uintptr_t base = base_;
  exec::CallBuffers& b = *buffers;
  b.type = DataType::kUint8;
  b.op = ReduceOp::kSum;
  b.nranks = nranks;
  b.tileElems = tileBytes;
  // Sends read Input chunks and receives write Output chunks; both number the same pieces.
  for (exec::BufferView* view : {&b.input, &b.output}) {
    view->base = reinterpret_cast<char*>(base);
    view->blockElems = 0;
    view->chunksPerBlock = 1;
    view->explicitExtents = extents_.data();
  }
  b.scratch = {};
  b.chunkTags = tags_.data();
  return bound_;
}

}  // namespace grove::detail
