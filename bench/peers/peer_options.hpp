// What a peer driver is asked to measure, parsed from the same flags as `grove perf` (the
// subset that makes sense for another library: -b -e -f -i -n -w -c -r -a), and the
// nccl-tests rules that turn a nominal size into counts and bus bandwidth. The rules are
// copied from tools/perf_options.cpp rather than linked, because the drivers are built by the
// MPI compiler wrappers outside the CMake build; keep the two in step.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace peers {

/// The collectives the peer drivers measure (float32, sum where it reduces).
enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast };

/// How the per-rank times of a timed loop are combined (-a), as in grove perf.
enum class TimeCombine { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

/// A wrong flag: main() prints the message and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Everything the flags set, validated.
struct Options {
  Collective collective = Collective::kAllReduce;
  size_t minBytes = size_t{32} << 20;
  size_t maxBytes = size_t{32} << 20;
  size_t stepFactor = 1;               ///< > 1: multiply the size by this factor each step.
  size_t stepBytes = size_t{1} << 20;  ///< Used when stepFactor == 1: add this each step.
  int iters = 20;
  int warmupIters = 5;
  int check = 1;  ///< Checking calls per size and placement; 0 disables checking.
  int root = 0;   ///< Root of broadcast.
  TimeCombine combine = TimeCombine::kMax;
  std::string storeDir;  ///< gloo_perf only: FileStore directory (--store or GLOO_STORE_DIR).
  bool help = false;     ///< -h/--help: print usage() and exit 0.
};

inline std::string_view toString(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

inline bool isReducing(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter;
}

/// A byte size: digits with an optional K, M or G suffix (powers of 1024).
inline std::optional<size_t> parseBytes(std::string_view text) {
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

inline std::string usage(const char* program) {
  return std::string("usage: ") + program +
         " COLLECTIVE [-b SIZE] [-e SIZE] [-f N | -i SIZE] [-n N] [-w N] [-c N] [-r ROOT]"
         " [-a 0..3]" +
         (std::string_view(program).find("gloo") != std::string_view::npos ? " [--store DIR]"
                                                                           : "") +
         "\n  COLLECTIVE: allreduce, allgather, reducescatter or broadcast (float32, sum)\n"
         "  flags as in grove perf (docs/perf.md); -a defaults to 3 (max over ranks)\n";
}

/// Parses argv; throws UsageError naming the flag. `wantsStore` accepts --store DIR.
/// With -h/--help as the first argument only `help` is set.
inline Options parseOptions(int argc, char** argv, bool wantsStore) {
  const char* program = argc > 0 ? argv[0] : "peer_perf";
  if (argc < 2) throw UsageError(usage(program));
  Options o;
  const std::string_view name = argv[1];
  if (name == "allreduce" || name == "all_reduce") {
    o.collective = Collective::kAllReduce;
  } else if (name == "allgather" || name == "all_gather") {
    o.collective = Collective::kAllGather;
  } else if (name == "reducescatter" || name == "reduce_scatter") {
    o.collective = Collective::kReduceScatter;
  } else if (name == "broadcast") {
    o.collective = Collective::kBroadcast;
  } else if (name == "-h" || name == "--help") {
    o.help = true;
    return o;
  } else {
    throw UsageError("collective: '" + std::string(name) +
                     "' is not one of allreduce, allgather, reducescatter, broadcast\n" +
                     usage(program));
  }
  bool sawFactor = false;
  bool sawStep = false;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw UsageError(flag + ": missing value\n" + usage(program));
    const std::string value = argv[++i];
    auto bytes = [&] {
      const std::optional<size_t> b = parseBytes(value);
      if (!b) throw UsageError(flag + ": '" + value + "' is not a size (digits, then K, M or G)");
      return *b;
    };
    auto integer = [&](long low, long high) {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0 || v < low || v > high) {
        throw UsageError(flag + ": '" + value + "' is not an integer in [" + std::to_string(low) +
                         ", " + std::to_string(high) + "]");
      }
      return v;
    };
    if (flag == "-b" || flag == "--minbytes") {
      o.minBytes = bytes();
    } else if (flag == "-e" || flag == "--maxbytes") {
      o.maxBytes = bytes();
    } else if (flag == "-f" || flag == "--stepfactor") {
      o.stepFactor = static_cast<size_t>(integer(1, 1L << 20));
      sawFactor = o.stepFactor > 1;
    } else if (flag == "-i" || flag == "--stepbytes") {
      o.stepBytes = bytes();
      if (o.stepBytes == 0) throw UsageError(flag + ": must be above 0");
      sawStep = true;
    } else if (flag == "-n" || flag == "--iters") {
      o.iters = static_cast<int>(integer(1, 1L << 30));
    } else if (flag == "-w" || flag == "--warmup_iters") {
      o.warmupIters = static_cast<int>(integer(0, 1L << 30));
    } else if (flag == "-c" || flag == "--check") {
      o.check = static_cast<int>(integer(0, 1L << 20));
    } else if (flag == "-r" || flag == "--root") {
      o.root = static_cast<int>(integer(0, 1L << 20));
    } else if (flag == "-a" || flag == "--average") {
      o.combine = static_cast<TimeCombine>(integer(0, 3));
    } else if (wantsStore && flag == "--store") {
      o.storeDir = value;
    } else {
      throw UsageError(flag + ": unknown flag\n" + usage(program));
    }
  }
  if (o.maxBytes < o.minBytes) {
    throw UsageError("-e/--maxbytes: " + std::to_string(o.maxBytes) + " is below -b/--minbytes " +
                     std::to_string(o.minBytes));
  }
  if (sawFactor && sawStep)
    throw UsageError("-f/--stepfactor and -i/--stepbytes exclude each other");
  return o;
}

/// The buffers and counts of one call, as nccl-tests defines them for a nominal size
/// (float32 elements).
struct Shape {
  size_t count = 0;              ///< The count argument of the call.
  size_t sendCount = 0;          ///< Elements of the send buffer.
  size_t recvCount = 0;          ///< Elements of the receive buffer.
  size_t sendInPlaceOffset = 0;  ///< NCCL in-place: sendbuf = B + this (elements).
  size_t recvInPlaceOffset = 0;  ///< NCCL in-place: recvbuf = B + this (elements).
  size_t bytes = 0;              ///< The "size" column: max(send, receive) bytes.
};

inline Shape shapeFor(Collective collective, size_t nominalBytes, int rank, int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  const size_t total = nominalBytes / sizeof(float);
  Shape s;
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
      s.count = s.sendCount = s.recvCount = total;
      break;
    case Collective::kAllGather:
      s.count = total / n;
      s.sendCount = s.count;
      s.recvCount = s.count * n;
      s.sendInPlaceOffset = static_cast<size_t>(rank) * s.count;
      break;
    case Collective::kReduceScatter:
      s.count = total / n;
      s.sendCount = s.count * n;
      s.recvCount = s.count;
      s.recvInPlaceOffset = static_cast<size_t>(rank) * s.count;
      break;
  }
  s.bytes = std::max(s.sendCount, s.recvCount) * sizeof(float);
  return s;
}

/// One shape per nominal size from -b to -e, skipping sizes whose count repeats.
inline std::vector<Shape> shapeSeries(const Options& o, int rank, int nranks) {
  std::vector<Shape> shapes;
  size_t size = o.minBytes;
  while (size <= o.maxBytes) {
    const Shape s = shapeFor(o.collective, size, rank, nranks);
    if (shapes.empty() || shapes.back().count != s.count) shapes.push_back(s);
    size_t next;
    if (o.stepFactor > 1) {
      if (size == 0) {
        next = 1;
      } else if (size > std::numeric_limits<size_t>::max() / o.stepFactor) {
        break;
      } else {
        next = size * o.stepFactor;
      }
    } else {
      if (size > std::numeric_limits<size_t>::max() - o.stepBytes) break;
      next = size + o.stepBytes;
    }
    size = next;
  }
  return shapes;
}

/// nccl-tests' bus bandwidth factor: busbw = algbw * factor.
inline double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks;
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return (n - 1) / n;
    case Collective::kBroadcast:
      return 1.0;
  }
  return 1.0;
}

}  // namespace peers
