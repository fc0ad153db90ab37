#include "algo/point_to_point.hpp"

#include "common/enforce.hpp"

namespace grove::algo {

void buildPointToPoint(int rank, int nranks, std::span<const TransferShape> transfers,
                       size_t tileBytes, plan::Plan* plan, std::vector<Piece>* pieces) {
  GROVE_ENFORCE_GT(tileBytes, size_t{0}, "point-to-point pieces need a tile");
  plan->collective = plan::Collective::kSendRecv;
  plan->algorithm = kPointToPointName;
  plan->rank = rank;
  plan->nranks = nranks;
  plan->root = -1;
  plan->chunksPerBlock = 1;
  plan->scratchBlocks = 0;
  pieces->clear();
  // Channel c serves (peer, direction) channelKey[c]; a batch has at most 2 n of them, so a
  // linear search is cheaper than any map. Channels are cleared, not destroyed, to keep
  // their steps' storage.
  size_t used = 0;
  auto channelFor = [&](const TransferShape& t) -> plan::Channel& {
    for (size_t c = 0; c < used; ++c) {
      const plan::Step& first = plan->channels[c].steps.front();
      const bool isSend = first.op == plan::OpKind::kSend;
      const int peer = isSend ? first.sendPeer : first.recvPeer;
      if (isSend == t.isSend && peer == t.peer) return plan->channels[c];
    }
    if (used == plan->channels.size()) plan->channels.emplace_back();
    plan::Channel& channel = plan->channels[used++];
    channel.steps.clear();
    return channel;
  };
  for (size_t i = 0; i < transfers.size(); ++i) {
    const TransferShape& t = transfers[i];
    GROVE_ENFORCE(t.peer >= 0 && t.peer < nranks, "transfer", i, "peer", t.peer, "of", nranks);
    plan::Channel& channel = channelFor(t);
    size_t offset = 0;
    do {
      const size_t bytes = std::min(tileBytes, t.bytes - offset);
      const auto chunk = static_cast<uint32_t>(pieces->size());
      pieces->push_back(Piece{static_cast<uint32_t>(i), offset, bytes});
      plan::Step step;
      if (t.isSend) {
        step.op = plan::OpKind::kSend;
        step.sendPeer = t.peer;
        step.src = {plan::BufferKind::kInput, chunk};
      } else {
        step.op = plan::OpKind::kRecv;
        step.recvPeer = t.peer;
        step.dst = {plan::BufferKind::kOutput, chunk};
      }
      channel.steps.push_back(step);
      offset += bytes;
    } while (offset < t.bytes);
  }
  plan->channels.resize(used);
  plan->inputBlocks = static_cast<uint32_t>(pieces->size());
  plan->outputBlocks = static_cast<uint32_t>(pieces->size());
}

}  // namespace grove::algo
