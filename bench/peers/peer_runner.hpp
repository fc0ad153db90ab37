// The measurement loop and the table of the peer drivers, shared by mpi_perf and gloo_perf so
// that both measure exactly as `grove perf` does (tools/perf_runner.cpp) and print the same
// nccl-tests table (tools/perf_report.cpp): -w warm-up calls at the largest and at the smallest
// size; then per size an out-of-place and an in-place run, each one untimed call, a barrier,
// -n timed calls (each rank times its own loop; the mean per call is combined over ranks per
// -a, max by default) and -c checking calls on freshly written, poisoned buffers whose wrong
// elements are summed over ranks. A library plugs in through Backend: how to issue one call,
// and how its ranks barrier and reduce a number.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "peer_data.hpp"
#include "peer_options.hpp"

namespace peers {

/// One "# Using devices" line.
struct RankLine {
  int rank = 0;
  int pid = 0;
  std::string host;
  std::string transport;
};

/// One call as the runner asks for it. `send` and `recv` follow NCCL's conventions (in place:
/// both point into the one buffer `base` at the shape's in-place offsets); a library whose
/// in-place form differs (MPI_IN_PLACE, Gloo) uses `base` and says where its result lies
/// through Backend::result().
struct Call {
  const Shape* shape = nullptr;
  bool inPlace = false;
  float* send = nullptr;
  float* recv = nullptr;
  float* base = nullptr;  ///< In place: the one buffer; out of place: equal to recv.
};

/// What a library provides to the runner. Every method is called by every rank in the same
/// order (the collective ones must be).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "Open MPI v4.1.4", "gloo 0.5.0": the header's library name and version.
  virtual std::string library() const = 0;
  /// The header's "# Algorithm:" text.
  virtual std::string algorithm() const = 0;
  /// Every rank's line (collective; the result is used on rank 0 only).
  virtual std::vector<RankLine> rankLines() = 0;
  /// Called once before the calls of one (shape, placement): build per-shape state here.
  virtual void prepare(const Call& call) { (void)call; }
  /// Issues one blocking call.
  virtual void issue(const Call& call) = 0;
  /// Where this rank's result of `call` lies (shape->recvCount elements).
  virtual const float* result(const Call& call) const { return call.recv; }
  virtual void barrier() = 0;
  /// `value` combined over ranks as `how` says; needed on rank 0 only.
  virtual double combine(double value, TimeCombine how) = 0;
  /// Sum over ranks, returned on every rank.
  virtual int64_t sum(int64_t value) = 0;
};

inline std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

namespace detail {

struct Measurement {
  double timeUs = 0;
  double algBw = 0;
  double busBw = 0;
  int64_t wrong = -1;  ///< -1: not checked (-c 0).
};

inline std::string formatTime(double us) {
  char text[32];
  const char* format = us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f";
  std::snprintf(text, sizeof(text), format, us);
  return text;
}

inline void printMeasurement(std::FILE* out, const Measurement& m) {
  const std::string wrong = m.wrong >= 0 ? std::to_string(m.wrong) : "N/A";
  std::fprintf(out, "  %s  %6.2f  %6.2f  %6s", formatTime(m.timeUs).c_str(), m.algBw, m.busBw,
               wrong.c_str());
}

inline void printHeader(std::FILE* out, const char* program, const Options& o, Backend& backend,
                        const std::vector<RankLine>& lines) {
  static const char* kCombineNames[] = {"rank0", "mean", "min", "max"};
  const std::string step = o.stepFactor > 1 ? std::to_string(o.stepFactor) + "(factor)"
                                            : std::to_string(o.stepBytes) + "(bytes)";
  std::fprintf(out, "# Collective test starting: %s %s (%s)\n", program,
               std::string(toString(o.collective)).c_str(), backend.library().c_str());
  std::fprintf(out,
               "# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: "
               "%d agg iters: 1 validation: %d graph: 0\n",
               backend.size(), o.minBytes, o.maxBytes, step.c_str(), o.warmupIters, o.iters,
               o.check);
  std::fprintf(out, "# Algorithm: %s  Time: %s over ranks (-a %d)\n", backend.algorithm().c_str(),
               kCombineNames[static_cast<int>(o.combine)], static_cast<int>(o.combine));
  std::fprintf(out, "#\n# Using devices\n");
  for (const RankLine& r : lines) {
    std::fprintf(out, "#  Rank %2d Group %2d Pid %6d on %10s transport %s\n", r.rank, 0, r.pid,
                 r.host.c_str(), r.transport.c_str());
  }
  std::fprintf(out, "#\n");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s           out-of-place%23sin-place\n", "", "", "",
               "", "", "");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
               "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
               "algbw", "busbw", "#wrong");
  std::fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s\n", "(B)",
               "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
               "(GB/s)");
  std::fflush(out);
}

}  // namespace detail

/// Runs the whole measurement; rank 0 prints the table to `out`. Returns the exit status: 0
/// when every checked element was right, 1 otherwise. Throws UsageError for a root out of range.
inline int runPerf(Backend& backend, const Options& o, const char* program, std::FILE* out) {
  const int rank = backend.rank();
  const int nranks = backend.size();
  if (o.collective == Collective::kBroadcast && o.root >= nranks) {
    throw UsageError("-r/--root: " + std::to_string(o.root) + " is out of range for " +
                     std::to_string(nranks) + " ranks (expected 0 <= root < " +
                     std::to_string(nranks) + ")");
  }
  const std::vector<Shape> shapes = shapeSeries(o, rank, nranks);
  size_t sendElems = 0;
  size_t bufferElems = 0;
  for (const Shape& s : shapes) {
    sendElems = std::max(sendElems, s.sendCount);
    bufferElems = std::max(bufferElems, s.bytes / sizeof(float));
  }
  AlignedBuffer sendBuffer(sendElems * sizeof(float));
  AlignedBuffer recvBuffer(bufferElems * sizeof(float));
  const Pattern pattern(o.collective, nranks, o.root);
  const int root = o.collective == Collective::kBroadcast ? o.root : -1;

  const std::vector<RankLine> lines = backend.rankLines();
  if (rank == 0) detail::printHeader(out, program, o, backend, lines);
  if (shapes.empty()) return 0;

  // Ordinary numbers in both buffers, so timed loops never meet denormals or NaN.
  pattern.fillInput(sendBuffer.data(), shapes.back(), rank, 0);
  pattern.fillInput(recvBuffer.data(), shapes.back(), rank, 0);

  auto makeCall = [&](const Shape& shape, bool inPlace) {
    Call c;
    c.shape = &shape;
    c.inPlace = inPlace;
    if (inPlace) {
      c.base = recvBuffer.data();
      c.send = c.base + shape.sendInPlaceOffset;
      c.recv = c.base + shape.recvInPlaceOffset;
    } else {
      c.send = sendBuffer.data();
      c.recv = c.base = recvBuffer.data();
    }
    return c;
  };

  backend.barrier();
  for (const Shape* warm : {&shapes.back(), &shapes.front()}) {
    const Call c = makeCall(*warm, false);
    backend.prepare(c);
    for (int i = 0; i < o.warmupIters; ++i) backend.issue(c);
  }

  auto measure = [&](const Shape& shape, bool inPlace, uint64_t salt) {
    const Call c = makeCall(shape, inPlace);
    backend.prepare(c);
    backend.issue(c);  // Untimed: every rank is in step before the clock starts.
    backend.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) backend.issue(c);
    const auto stop = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(stop - start).count() /
                      static_cast<double>(o.iters);
    detail::Measurement m;
    m.timeUs = backend.combine(us, o.combine);
    m.algBw = m.timeUs > 0 ? static_cast<double>(shape.bytes) / (m.timeUs * 1e3) : 0.0;
    m.busBw = m.algBw * busBandwidthFactor(o.collective, nranks);
    if (o.check > 0) {
      int64_t wrong = 0;
      for (int k = 0; k < o.check && wrong == 0; ++k) {
        const uint64_t checkSalt = salt * 16 + static_cast<uint64_t>(k);
        if (inPlace) {
          poison(c.base, shape.bytes / sizeof(float));
        } else {
          poison(c.send, shape.sendCount);
          poison(c.recv, shape.recvCount);
        }
        if (pattern.providesInput(rank)) pattern.fillInput(c.send, shape, rank, checkSalt);
        backend.issue(c);
        wrong = backend.sum(pattern.countWrong(backend.result(c), shape, rank, checkSalt));
      }
      m.wrong = wrong;
    }
    return m;
  };

  uint64_t salt = 0;
  int64_t totalWrong = 0;
  double totalBusBw = 0;
  for (const Shape& shape : shapes) {
    const detail::Measurement outOfPlace = measure(shape, false, ++salt);
    const detail::Measurement inPlace = measure(shape, true, ++salt);
    totalWrong += std::max<int64_t>(0, outOfPlace.wrong) + std::max<int64_t>(0, inPlace.wrong);
    totalBusBw += outOfPlace.busBw + inPlace.busBw;
    if (rank == 0) {
      std::fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", shape.bytes, shape.count, "float",
                   isReducing(o.collective) ? "sum" : "none", root);
      detail::printMeasurement(out, outOfPlace);
      detail::printMeasurement(out, inPlace);
      std::fprintf(out, "\n");
      std::fflush(out);
    }
  }
  if (rank == 0) {
    std::fprintf(out, "# Out of bounds values : %lld %s\n", static_cast<long long>(totalWrong),
                 totalWrong == 0 ? "OK" : "FAILED");
    std::fprintf(out, "# Avg bus bandwidth    : %.3f\n#\n",
                 totalBusBw / (2.0 * static_cast<double>(shapes.size())));
    std::fflush(out);
  }
  backend.barrier();
  return totalWrong == 0 ? 0 : 1;
}

}  // namespace peers
