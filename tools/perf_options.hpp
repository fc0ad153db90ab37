// What `grove perf` is asked to measure: the collective, the size series, the types and
// operators, and how to time and check — plus the nccl-tests rules that turn a nominal
// size into element counts and bus bandwidth. Pure functions, no communication.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grove/types.hpp"
#include "plan/plan.hpp"

namespace grove::tools::perf {

/// The collectives grove perf measures (nccl-tests' *_perf programs).
enum class Collective {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kSendRecv,  ///< Ring exchange inside a group: send to rank + 1, receive from rank - 1.
};

/// Every Collective, in the order above.
const std::vector<Collective>& allCollectives();
/// Lower-case name as typed on the command line, e.g. "reducescatter".
std::string_view toString(Collective collective);

/// The plan layer's name for a collective (what a plan request asks for).
plan::Collective planCollective(Collective collective);
/// Parses a collective name; also accepts nccl-tests' "all_reduce" style spellings.
std::optional<Collective> parseCollective(std::string_view name);
/// True for the collectives that take a reduction operator.
bool isReducing(Collective collective);
/// True for the collectives that take a root.
bool hasRoot(Collective collective);

/// How the per-rank times of a timed loop are combined (-a).
enum class TimeCombine { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

/// What the timed calls send: the checks' small integers, values drawn like gradients
/// (they compress as gradients do, for GROVE_COMPRESS), or uniform random bits.
enum class Fill { kPattern, kGaussian, kRandom };

/// Everything the flags of `grove perf` set, validated.
struct Options {
  Collective collective = Collective::kAllReduce;
  size_t minBytes = size_t{32} << 20;
  size_t maxBytes = size_t{32} << 20;
  size_t stepFactor = 1;               ///< > 1: multiply the size by this factor each step.
  size_t stepBytes = size_t{1} << 20;  ///< Used when stepFactor == 1: add this each step.
  int iters = 20;
  int warmupIters = 5;
  int check = 1;  ///< Checking runs per size and placement; 0 disables checking.
  std::vector<DataType> types{DataType::kFloat32};
  std::vector<ReduceOp> ops{ReduceOp::kSum};
  int root = 0;
  int nranks = 1;  ///< -t: ranks, as threads of this process.
  TimeCombine combine = TimeCombine::kMean;
  int blocking = 0;
  /// -R: 1 = send and receive buffers from grove::allocate (registered memory, which the
  /// other ranks on this host can read in place); 0 = ordinary memory.
  int registered = 0;
  std::string algorithm;  ///< -A: CallOptions::algorithm for every call; empty = grove chooses.
  std::string jsonPath;   ///< -J: where to write the JSON report; empty = none.
  /// --fill: what timed calls send (perf_data.hpp, fillTimed); the checks keep their exact
  /// pattern whatever it is.
  Fill fill = Fill::kPattern;
};

/// Parses a byte size: a non-negative integer with an optional K, M or G suffix (powers of
/// 1024, either case). Returns nullopt for anything else (also on overflow).
std::optional<size_t> parseBytes(std::string_view text);

/// The buffers and counts of one call, as nccl-tests defines them for a nominal size.
struct Shape {
  size_t count = 0;      ///< The count argument of the call (elements per rank / per block).
  size_t sendCount = 0;  ///< Elements of the send buffer.
  size_t recvCount = 0;  ///< Elements of the receive buffer.
  /// In-place layout: the send and receive buffers are one buffer B with sendbuf = B +
  /// sendInPlaceOffset and recvbuf = B + recvInPlaceOffset (elements; rank-dependent).
  size_t sendInPlaceOffset = 0;
  size_t recvInPlaceOffset = 0;
  size_t bytes = 0;  ///< The "size" column: max(send, receive) bytes.
};

/// The shape of `collective` for a nominal size of `nominalBytes` on rank `rank` of `nranks`:
/// count = nominalBytes / element size, divided by nranks for the collectives whose size
/// counts every rank's block (allgather, reducescatter, alltoall, gather, scatter).
Shape shapeFor(Collective collective, size_t nominalBytes, DataType type, int rank, int nranks);

/// The nominal sizes from minBytes to maxBytes (factor or increment steps). A step from 0
/// with a factor goes to 1.
std::vector<size_t> nominalSizes(const Options& options);

/// The shapes `rank` measures for one type: one per nominal size, skipping sizes whose
/// rounded count repeats the previous one (the same rows on every rank; only the in-place
/// offsets depend on the rank).
std::vector<Shape> shapeSeries(const Options& options, DataType type, int rank);

/// nccl-tests' bus bandwidth factor: busbw = algbw * factor.
double busBandwidthFactor(Collective collective, int nranks);

/// The default operator list and type list spelled "all".
const std::vector<DataType>& allDataTypes();
const std::vector<ReduceOp>& allReduceOps();

}  // namespace grove::tools::perf
