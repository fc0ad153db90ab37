// Names of the plan IR's step kinds. Their operand tables (does a kind receive, send, read
// `src`, write `dst`, reduce?) are inline in plan.hpp: every consumer of a plan asks them, the
// executor for every step it fires, and answering them in one place keeps those consumers
// from growing private switch statements that drift apart when a kind is added.
#include "plan/plan.hpp"

namespace grove::plan {

const char* toString(OpKind op) {
  switch (op) {
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kRecvReduce:
      return "rr";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kRecvReduceSend:
      return "rrs";
    case OpKind::kRecvCopySend:
      return "rcs";
    case OpKind::kRecvReduceCopy:
      return "rrc";
    case OpKind::kRecvReduceCopySend:
      return "rrcs";
    case OpKind::kGet:
      return "get";
    case OpKind::kReduceAll:
      return "rall";
    case OpKind::kSignal:
      return "signal";
    case OpKind::kWait:
      return "wait";
  }
  return "?";
}

}  // namespace grove::plan
