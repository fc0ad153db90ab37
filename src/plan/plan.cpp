// Names and operand tables of the plan IR.
//
// Every consumer of a plan (verifier, printer, reader, executor, simulator) asks the same
// questions of a step kind: does it receive, send, read `src`, write `dst`, reduce? Answering
// them here, once, keeps those consumers from growing private switch statements that drift
// apart when a kind is added.
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

bool receives(OpKind op) {
  switch (op) {
    case OpKind::kRecv:
    case OpKind::kRecvReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvCopySend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
    case OpKind::kWait:
      return true;
    default:
      return false;
  }
}

bool sends(OpKind op) {
  switch (op) {
    case OpKind::kSignal:
    case OpKind::kSend:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvCopySend:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

bool readsSrc(OpKind op) {
  switch (op) {
    case OpKind::kGet:
    case OpKind::kReduceAll:
    case OpKind::kSignal:
    case OpKind::kWait:
    case OpKind::kSend:
    case OpKind::kCopy:
    case OpKind::kReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

bool writesDst(OpKind op) {
  switch (op) {
    case OpKind::kGet:
    case OpKind::kReduceAll:
    case OpKind::kRecv:
    case OpKind::kRecvReduce:
    case OpKind::kCopy:
    case OpKind::kReduce:
    case OpKind::kRecvCopySend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

bool reduces(OpKind op) {
  switch (op) {
    case OpKind::kReduceAll:
    case OpKind::kRecvReduce:
    case OpKind::kReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvReduceCopy:
    case OpKind::kRecvReduceCopySend:
      return true;
    default:
      return false;
  }
}

bool readsPeer(OpKind op) { return op == OpKind::kGet; }

bool readsEveryRank(OpKind op) { return op == OpKind::kReduceAll; }

}  // namespace grove::plan
