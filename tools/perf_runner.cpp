// The measurement loop of grove perf, as nccl-tests runs it: for each type and operator,
// warm-up calls at the largest and smallest size; then for each size an out-of-place and an
// in-place run, each one untimed call, a barrier, `iters` timed calls, and `check` checking
// calls on freshly initialised (and poisoned) buffers. Each rank times its own loop; the
// ranks' times are combined per -a and their wrong-element counts summed. Buffers are
// allocated once for the largest size: ordinary memory, or with -R 1 memory from
// grove::allocate (nccl-tests' -R: registered buffers, which peers on this host read in place).
#include "perf_runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/launch.hpp"
#include "core/comm_state.hpp"
#include "grove/communicator.hpp"
#include "perf_data.hpp"
#include "perf_report.hpp"
#include "perf_team.hpp"

namespace grove::tools::perf {
namespace {

/// State shared by the rank threads.
struct Shared {
  explicit Shared(const Options& o, std::FILE* f) : options(o), out(f) {}
  const Options& options;
  std::FILE* out;
  Team team;
  std::vector<Row> rows;  ///< Written by rank 0 only.
  std::mutex errorMutex;
  std::exception_ptr error;
  int errorRank = -1;
  bool errorIsRemote = true;
};

/// One rank's side of the measurement.
class RankRunner {
 public:
  RankRunner(Shared& shared, Communicator& comm)
      : shared_(shared),
        options_(shared.options),
        comm_(comm),
        rank_(comm.rank()),
        nranks_(comm.size()),
        sendBuffer_(options_.maxBytes, options_.registered != 0),
        recvBuffer_(options_.maxBytes, options_.registered != 0) {
    callOptions_.algorithm = options_.algorithm;
  }

  void run() {
    const bool reducing = isReducing(options_.collective);
    const int root = hasRoot(options_.collective) ? options_.root : -1;
    uint64_t salt = 0;
    for (DataType type : options_.types) {
      const std::vector<Shape> shapes = shapeSeries(options_, type, rank_);
      if (shapes.empty()) continue;
      const std::vector<ReduceOp> ops =
          reducing ? options_.ops : std::vector<ReduceOp>{ReduceOp::kSum};
      for (ReduceOp op : ops) {
        type_ = type;
        op_ = op;
        Pattern pattern(options_.collective, type, op, nranks_, options_.root);
        // Ordinary numbers in both buffers, so timed loops never meet denormals or NaN.
        pattern.fillInput(sendBuffer_.data(), shapes.back(), rank_, 0);
        pattern.fillInput(recvBuffer_.data(), shapes.back(), rank_, 0);
        shared_.team.sync(comm_);
        for (int i = 0; i < options_.warmupIters; ++i) issue(shapes.back(), false);
        for (int i = 0; i < options_.warmupIters; ++i) issue(shapes.front(), false);
        // The tool's own calls (combining times, summing wrong counts) may connect ranks the
        // measured collective does not. Connect them now: made in the first timed loop, a
        // connection stalled the ranks waiting on the one making it for milliseconds (4-rank
        // allgather: 55-370 us per call at the first size, 6-10 us at the next).
        shared_.team.combine(comm_, 0.0, options_.combine);
        shared_.team.sum(comm_, 0);
        for (const Shape& shape : shapes) {
          Row row;
          row.collective = options_.collective;
          row.bytes = shape.bytes;
          row.count = shape.count;
          row.type = type;
          if (reducing) row.op = op;
          row.root = root;
          row.nranks = nranks_;
          row.outOfPlace = measure(pattern, shape, false, ++salt);
          // What the calls ran (the direct path is decided per call, not by the selection).
          if (rank_ == 0) row.algorithm = algorithmName(shape);
          row.inPlace = measure(pattern, shape, true, ++salt);
          if (rank_ == 0) {
            std::fprintf(shared_.out, "%s\n", formatRow(row).c_str());
            std::fflush(shared_.out);
            shared_.rows.push_back(std::move(row));
          }
        }
      }
    }
  }

 private:
  struct Buffers {
    std::byte* send;
    std::byte* recv;
  };

  Buffers buffers(const Shape& shape, bool inPlace) const {
    if (!inPlace) return {sendBuffer_.data(), recvBuffer_.data()};
    const size_t width = dataTypeSize(type_);
    return {recvBuffer_.data() + shape.sendInPlaceOffset * width,
            recvBuffer_.data() + shape.recvInPlaceOffset * width};
  }

  void issue(const Shape& shape, bool inPlace) {
    const auto [send, recv] = buffers(shape, inPlace);
    const size_t count = shape.count;
    const int root = options_.root;
    switch (options_.collective) {
      case Collective::kAllReduce:
        comm_.allReduce(send, recv, count, type_, op_, callOptions_);
        break;
      case Collective::kBroadcast:
        comm_.broadcast(send, recv, count, type_, root, callOptions_);
        break;
      case Collective::kReduce:
        comm_.reduce(send, recv, count, type_, op_, root, callOptions_);
        break;
      case Collective::kAllGather:
        comm_.allGather(send, recv, count, type_, callOptions_);
        break;
      case Collective::kReduceScatter:
        comm_.reduceScatter(send, recv, count, type_, op_, callOptions_);
        break;
      case Collective::kAllToAll:
        comm_.allToAll(send, recv, count, type_, callOptions_);
        break;
      case Collective::kGather:
        comm_.gather(send, recv, count, type_, root, callOptions_);
        break;
      case Collective::kScatter:
        comm_.scatter(send, recv, count, type_, root, callOptions_);
        break;
      case Collective::kSendRecv:
        comm_.groupStart();
        comm_.send(send, count, type_, (rank_ + 1) % nranks_);
        comm_.recv(recv, count, type_, (rank_ + nranks_ - 1) % nranks_);
        comm_.groupEnd();
        break;
    }
  }

  /// Writes the inputs of a checking run and poisons what the call must overwrite.
  void prepareCheck(const Pattern& pattern, const Shape& shape, bool inPlace, uint64_t salt) {
    const size_t width = dataTypeSize(type_);
    const auto [send, recv] = buffers(shape, inPlace);
    if (inPlace) {
      poison(recvBuffer_.data(), shape.bytes);
    } else {
      poison(send, shape.sendCount * width);
      poison(recv, shape.recvCount * width);
    }
    if (pattern.providesInput(rank_)) pattern.fillInput(send, shape, rank_, salt);
  }

  Measurement measure(const Pattern& pattern, const Shape& shape, bool inPlace, uint64_t salt) {
    Team& team = shared_.team;
    if (options_.fill != Fill::kPattern) {
      const auto [send, recv] = buffers(shape, inPlace);
      fillTimed(send, shape.sendCount, type_, rank_, options_.fill);
    }
    issue(shape, inPlace);  // Untimed: every rank is in step before the clock starts.
    team.sync(comm_);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.iters; ++i) issue(shape, inPlace);
    const auto stop = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(stop - start).count() /
                      static_cast<double>(options_.iters);

    Measurement m;
    m.timeUs = team.combine(comm_, us, options_.combine);
    m.algBw = m.timeUs > 0 ? static_cast<double>(shape.bytes) / (m.timeUs * 1e3) : 0.0;
    m.busBw = m.algBw * busBandwidthFactor(options_.collective, nranks_);
    if (options_.check > 0) {
      int64_t wrong = 0;
      for (int c = 0; c < options_.check && wrong == 0; ++c) {
        const uint64_t checkSalt = salt * 16 + static_cast<uint64_t>(c);
        prepareCheck(pattern, shape, inPlace, checkSalt);
        issue(shape, inPlace);
        const auto [send, recv] = buffers(shape, inPlace);
        wrong = team.sum(comm_, pattern.countWrong(recv, shape, rank_, checkSalt));
      }
      m.wrong = wrong;
    }
    return m;
  }

  /// The algorithm the latest call of this shape ran (or else the communicator's choice).
  std::string algorithmName(const Shape& shape) {
    if (options_.collective == Collective::kSendRecv) return "p2p";
    if (std::string_view ran = comm_.state().lastAlgorithm(); !ran.empty()) {
      return std::string(ran);
    }
    plan::PlanRequest request;
    request.collective = planCollective(options_.collective);
    request.nranks = nranks_;
    request.rank = rank_;
    request.root = hasRoot(options_.collective) ? options_.root : -1;
    request.count = shape.count;
    request.type = type_;
    request.op = op_;
    try {
      return std::string(comm_.state().chooseAlgorithm(request, options_.algorithm).name);
    } catch (const std::exception&) {
      return options_.algorithm.empty() ? "unknown" : options_.algorithm;
    }
  }

  Shared& shared_;
  const Options& options_;
  Communicator& comm_;
  const int rank_;
  const int nranks_;
  PerfBuffer sendBuffer_;
  PerfBuffer recvBuffer_;
  CallOptions callOptions_;
  DataType type_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
};

void runRank(Shared& shared, Communicator& comm) {
  try {
    RankRunner runner(shared, comm);
    runner.run();
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    bool remote = false;
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      remote = e.code() == ErrorCode::kRemoteError;
    } catch (...) {
    }
    {
      std::lock_guard lock(shared.errorMutex);
      // Keep the root cause: a rank's own failure wins over a peer's "remote error".
      if (!shared.error || (shared.errorIsRemote && !remote)) {
        shared.error = error;
        shared.errorRank = comm.rank();
        shared.errorIsRemote = remote;
      }
    }
    comm.abort();
  }
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

namespace {

/// What a rank tells rank 0 for the header's "# Rank" lines.
struct RankRecord {
  int32_t pid = 0;
  char host[64] = {};
  char transport[16] = {};
};

/// One communicator for this process when a launcher started it (grove run, torchrun,
/// mpirun, srun), else `threads` in-process ranks.
std::vector<Communicator> makeCommunicators(const Options& options, bool launched) {
  if (!launched) return Communicator::createInProcess(options.nranks);
  if (options.nranks != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("-t/--nthreads is {}, but this process was started by a launcher "
                            "(it is one rank of the job); use -t 1",
                            options.nranks));
  }
  std::vector<Communicator> comms;
  comms.push_back(Communicator::fromEnv());
  return comms;
}

std::vector<RankLine> rankLines(std::vector<Communicator>& comms, bool launched) {
  std::vector<RankLine> lines;
  const std::string host = hostName();
  if (!launched) {
    for (Communicator& comm : comms) {
      lines.push_back(RankLine{comm.rank(), 0, static_cast<int>(getpid()), host, "inproc"});
    }
    return lines;
  }
  Communicator& comm = comms.front();
  RankRecord mine;
  mine.pid = static_cast<int32_t>(getpid());
  std::snprintf(mine.host, sizeof(mine.host), "%s", host.c_str());
  std::snprintf(mine.transport, sizeof(mine.transport), "%s",
                std::string(comm.state().transport().name()).c_str());
  std::vector<RankRecord> all(static_cast<size_t>(comm.size()));
  comm.allGather(&mine, all.data(), sizeof(RankRecord), DataType::kUint8);
  for (int r = 0; r < comm.size(); ++r) {
    lines.push_back(RankLine{r, 0, all[r].pid, all[r].host, all[r].transport});
  }
  return lines;
}

}  // namespace

int runPerf(const Options& requested, std::FILE* out) {
  const bool launched =
      bootstrap::detectLaunch([](const char* name) { return std::getenv(name); }).has_value();
  std::vector<Communicator> comms = makeCommunicators(requested, launched);
  // Under a launcher every size and count is computed for the job's rank count.
  Options options = requested;
  options.nranks = launched ? comms.front().size() : requested.nranks;
  if (hasRoot(options.collective) && options.root >= options.nranks) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("-r/--root: {} is out of range for {} with {} ranks (expected 0 <= "
                    "root < {})",
                    options.root, toString(options.collective), options.nranks, options.nranks));
  }
  std::vector<RankLine> lines = rankLines(comms, launched);
  // In a multi-process job only rank 0 reports, as nccl-tests does.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> quiet(nullptr, &std::fclose);
  if (launched && comms.front().rank() != 0) {
    quiet.reset(std::fopen("/dev/null", "w"));
    out = quiet.get();
  }
  printHeader(out, options, lines);

  Shared shared(options, out);
  {
    std::vector<std::jthread> threads;
    threads.reserve(comms.size());
    for (Communicator& comm : comms) {
      threads.emplace_back([&shared, &comm] { runRank(shared, comm); });
    }
  }

  if (shared.error) {
    std::fflush(out);
    try {
      std::rethrow_exception(shared.error);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("rank {}: {}", shared.errorRank, e.what()));
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kInternalError,
                  fmt::format("rank {}: {}", shared.errorRank, e.what()));
    }
  }

  const Summary summary = summarize(shared.rows);
  printFooter(out, summary);
  if (!options.jsonPath.empty() && out != quiet.get()) {
    writeJson(options.jsonPath, toJson(options, shared.rows, summary));
  }
  return summary.wrong == 0 ? 0 : 1;
}

}  // namespace grove::tools::perf
