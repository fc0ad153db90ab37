// The verifier's rule for sendrecv plans: what each piece a rank receives must hold. A
// point-to-point batch has no collective formula; its result is fixed by the issue order of
// both ranks' transfers (algo/point_to_point.hpp), so it is derived from all ranks' plans.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "plan/verifier_model.hpp"

namespace grove::plan::verifier_model {

Status pointToPointExpectations(const std::vector<Plan>& plans,
                                std::vector<std::vector<Expectation>>* expectations) {
  // Pieces are numbered in issue order (algo/point_to_point.hpp), and two ranks match their
  // pieces in issue order: the m-th piece rank r receives from q must hold the m-th piece q
  // sends to r. Collected per (sender, receiver) from the steps, then sorted by piece.
  const auto n = static_cast<int>(plans.size());
  std::map<std::pair<int, int>, std::vector<uint32_t>> sent;
  std::map<std::pair<int, int>, std::vector<uint32_t>> received;
  for (const Plan& p : plans) {
    for (const Channel& channel : p.channels) {
      for (const Step& step : channel.steps) {
        if (step.op == OpKind::kSend) sent[{p.rank, step.sendPeer}].push_back(step.src.chunk);
        if (step.op == OpKind::kRecv) received[{step.recvPeer, p.rank}].push_back(step.dst.chunk);
      }
    }
  }
  expectations->assign(static_cast<size_t>(n), {});
  for (const Plan& p : plans) {
    (*expectations)[static_cast<size_t>(p.rank)].resize(p.chunks(BufferKind::kOutput));
  }
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) {
      std::vector<uint32_t>& out = sent[{from, to}];
      std::vector<uint32_t>& in = received[{from, to}];
      if (out.size() != in.size()) {
        return Status::failure(
            ErrorCode::kInvalidArgument,
            fmt::format("rank {} sends {} piece(s) to rank {}, which receives {} from it", from,
                        out.size(), to, in.size()));
      }
      std::sort(out.begin(), out.end());
      std::sort(in.begin(), in.end());
      for (size_t m = 0; m < in.size(); ++m) {
        Expectation& expected = (*expectations)[static_cast<size_t>(to)][in[m]];
        expected.kind = Expectation::Kind::kExact;
        expected.items = {contribution(static_cast<uint32_t>(from), out[m])};
      }
    }
  }
  return {};
}

}  // namespace grove::plan::verifier_model
