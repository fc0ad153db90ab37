#include "plan/call_shape.hpp"

#include <fmt/format.h>

namespace grove::plan {

const char* toString(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kAllToAllv:
      return "alltoallv";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kBarrier:
      return "barrier";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

std::string CallShape::details() const {
  std::string text = fmt::format("count {} {}", count, toString(type));
  if (reduces()) text += fmt::format(" {}", toString(op));
  if (root >= 0) text += fmt::format(", root {}", root);
  return text;
}

}  // namespace grove::plan
