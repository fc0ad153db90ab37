// nccl-tests' size rules for grove perf: which counts a nominal size means for each
// collective, how the size series steps, and the bus bandwidth factors. Kept apart from the
// flag parsing so that the rules read in one place.
#include "perf_options.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace grove::tools::perf {

const std::vector<Collective>& allCollectives() {
  static const std::vector<Collective> kAll{
      Collective::kAllReduce, Collective::kBroadcast,     Collective::kReduce,
      Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll,
      Collective::kGather,    Collective::kScatter,       Collective::kSendRecv};
  return kAll;
}

plan::Collective planCollective(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return plan::Collective::kAllReduce;
    case Collective::kBroadcast:
      return plan::Collective::kBroadcast;
    case Collective::kReduce:
      return plan::Collective::kReduce;
    case Collective::kAllGather:
      return plan::Collective::kAllGather;
    case Collective::kReduceScatter:
      return plan::Collective::kReduceScatter;
    case Collective::kAllToAll:
      return plan::Collective::kAllToAll;
    case Collective::kGather:
      return plan::Collective::kGather;
    case Collective::kScatter:
      return plan::Collective::kScatter;
    case Collective::kSendRecv:
      return plan::Collective::kSendRecv;
  }
  return plan::Collective::kAllReduce;
}

std::string_view toString(Collective collective) {
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
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

std::optional<Collective> parseCollective(std::string_view name) {
  std::string plain;
  for (char c : name) {
    if (c != '_') plain += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (plain.size() > 4 && plain.ends_with("perf")) plain.resize(plain.size() - 4);
  for (Collective collective : allCollectives()) {
    if (plain == toString(collective)) return collective;
  }
  return std::nullopt;
}

bool isReducing(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kReduce ||
         collective == Collective::kReduceScatter;
}

bool hasRoot(Collective collective) {
  return collective == Collective::kBroadcast || collective == Collective::kReduce ||
         collective == Collective::kGather || collective == Collective::kScatter;
}

std::optional<size_t> parseBytes(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t shift = 0;
  switch (text.back()) {
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    default:
      break;
  }
  if (shift != 0) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const size_t digit = static_cast<size_t>(c - '0');
    if (value > (std::numeric_limits<size_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (shift != 0 && value > (std::numeric_limits<size_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

Shape shapeFor(Collective collective, size_t nominalBytes, DataType type, int rank, int nranks) {
  const size_t elem = dataTypeSize(type);
  const size_t n = static_cast<size_t>(nranks);
  const size_t r = static_cast<size_t>(rank);
  const size_t total = nominalBytes / elem;
  Shape shape;
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      shape.count = total;
      shape.sendCount = total;
      shape.recvCount = total;
      break;
    case Collective::kAllGather:
    case Collective::kGather:
      shape.count = total / n;
      shape.sendCount = shape.count;
      shape.recvCount = shape.count * n;
      shape.sendInPlaceOffset = r * shape.count;
      break;
    case Collective::kReduceScatter:
    case Collective::kScatter:
      shape.count = total / n;
      shape.sendCount = shape.count * n;
      shape.recvCount = shape.count;
      shape.recvInPlaceOffset = r * shape.count;
      break;
    case Collective::kAllToAll:
      shape.count = total / n;
      shape.sendCount = shape.count * n;
      shape.recvCount = shape.count * n;
      break;
  }
  shape.bytes = std::max(shape.sendCount, shape.recvCount) * elem;
  return shape;
}

std::vector<size_t> nominalSizes(const Options& options) {
  std::vector<size_t> sizes;
  size_t size = options.minBytes;
  while (size <= options.maxBytes) {
    sizes.push_back(size);
    size_t next;
    if (options.stepFactor > 1) {
      if (size == 0) {
        next = 1;
      } else if (size > std::numeric_limits<size_t>::max() / options.stepFactor) {
        break;
      } else {
        next = size * options.stepFactor;
      }
    } else {
      if (size > std::numeric_limits<size_t>::max() - options.stepBytes) break;
      next = size + options.stepBytes;
    }
    size = next;
  }
  return sizes;
}

std::vector<Shape> shapeSeries(const Options& options, DataType type, int rank) {
  std::vector<Shape> shapes;
  for (size_t nominal : nominalSizes(options)) {
    Shape shape = shapeFor(options.collective, nominal, type, rank, options.nranks);
    if (!shapes.empty() && shapes.back().count == shape.count) continue;
    shapes.push_back(shape);
  }
  return shapes;
}

double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks;
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

const std::vector<DataType>& allDataTypes() {
  static const std::vector<DataType> kAll{
      DataType::kInt8,    DataType::kUint8,   DataType::kInt32,   DataType::kUint32,
      DataType::kInt64,   DataType::kUint64,  DataType::kFloat16, DataType::kFloat32,
      DataType::kFloat64, DataType::kBFloat16};
  return kAll;
}

const std::vector<ReduceOp>& allReduceOps() {
  static const std::vector<ReduceOp> kAll{ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                          ReduceOp::kMin, ReduceOp::kAvg};
  return kAll;
}

}  // namespace grove::tools::perf
