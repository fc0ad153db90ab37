// How grove perf's ranks agree on one figure (a time, a count of wrong elements) outside the
// timed loops: through the communicator being measured, as nccl-tests does through MPI.
#pragma once

#include <cstdint>

#include "grove/communicator.hpp"
#include "perf_options.hpp"

namespace grove::tools::perf {

/// The ranks agreeing on times and wrong counts, through the communicator itself (as
/// nccl-tests does through MPI), so the same code serves threads and processes. Only used
/// outside timed loops.
class Team {
 public:
  void sync(Communicator& comm) { comm.barrier(); }

  double combine(Communicator& comm, double value, TimeCombine how) {
    double result = value;
    switch (how) {
      case TimeCombine::kRank0:
        comm.broadcast(&value, &result, 1, DataType::kFloat64, 0);
        break;
      case TimeCombine::kMean:
        comm.allReduce(&value, &result, 1, DataType::kFloat64, ReduceOp::kAvg);
        break;
      case TimeCombine::kMin:
        comm.allReduce(&value, &result, 1, DataType::kFloat64, ReduceOp::kMin);
        break;
      case TimeCombine::kMax:
        comm.allReduce(&value, &result, 1, DataType::kFloat64, ReduceOp::kMax);
        break;
    }
    return result;
  }

  int64_t sum(Communicator& comm, int64_t value) {
    int64_t result = 0;
    comm.allReduce(&value, &result, 1, DataType::kInt64, ReduceOp::kSum);
    return result;
  }
};

}  // namespace grove::tools::perf
