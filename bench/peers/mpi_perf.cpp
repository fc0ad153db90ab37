// mpi_perf: grove perf's measurement and table for an MPI library, so users can set what they
// run today (Open MPI, MPICH) beside grove, row for row. The same source is built twice, by
// mpicxx.openmpi and by mpicxx.mpich (bench/peers/build.sh), and started by that library's
// mpirun. The calls are the ones an MPI user writes for the nccl-tests collectives:
//   allreduce      MPI_Allreduce             in place: MPI_IN_PLACE, one buffer
//   allgather      MPI_Allgather             in place: MPI_IN_PLACE, own block at rank*count
//   reducescatter  MPI_Reduce_scatter_block  in place: MPI_IN_PLACE; the result lands at the
//                                            start of the buffer (MPI's rule), not at
//                                            rank*count (NCCL's), and is checked there
//   broadcast      MPI_Bcast                 MPI has one buffer: out of place the root first
//                                            copies send to receive (what NCCL's out-of-place
//                                            form means), in place it broadcasts the buffer
// Times are combined with MPI_Reduce (MPI_MAX by default, -a), wrong counts with
// MPI_Allreduce. See bench/README.md ("Peers") for how to run it and the settings.
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "peer_runner.hpp"

namespace {

using peers::Call;
using peers::Collective;
using peers::TimeCombine;

#if defined(OPEN_MPI)
constexpr const char* kTransport = "openmpi";
#elif defined(MPICH_VERSION)
constexpr const char* kTransport = "mpich";
#else
constexpr const char* kTransport = "mpi";
#endif

/// The MPI calls of one collective.
class MpiBackend : public peers::Backend {
 public:
  explicit MpiBackend(Collective collective, int root) : collective_(collective), root_(root) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::string library() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, static_cast<size_t>(length));
    const size_t cut = text.find_first_of(",\n");  // First clause: name and version.
    if (cut != std::string::npos) text.resize(cut);
    // MPICH says "MPICH Version:\t4.0.2": keep "MPICH 4.0.2", on one line.
    if (const size_t at = text.find("Version:"); at != std::string::npos) text.erase(at, 8);
    std::string clean;
    for (char c : text) {
      const bool space = c == ' ' || c == '\t' || c == '\0';
      if (space && (clean.empty() || clean.back() == ' ')) continue;
      clean.push_back(space ? ' ' : c);
    }
    while (!clean.empty() && clean.back() == ' ') clean.pop_back();
    return clean;
  }

  std::string algorithm() const override { return "chosen by the MPI library"; }

  std::vector<peers::RankLine> rankLines() override {
    struct Record {
      int pid;
      char host[64];
    };
    Record mine{};
    mine.pid = static_cast<int>(getpid());
    std::snprintf(mine.host, sizeof(mine.host), "%s", peers::hostName().c_str());
    std::vector<Record> all(static_cast<size_t>(size_));
    MPI_Gather(&mine, sizeof(Record), MPI_BYTE, all.data(), sizeof(Record), MPI_BYTE, 0,
               MPI_COMM_WORLD);
    std::vector<peers::RankLine> lines;
    for (int r = 0; r < size_ && rank_ == 0; ++r) {
      lines.push_back({r, all[r].pid, all[r].host, kTransport});
    }
    return lines;
  }

  void prepare(const Call& call) override {
    if (call.shape->count > static_cast<size_t>(INT_MAX)) {
      throw peers::UsageError("-e/--maxbytes: count " + std::to_string(call.shape->count) +
                              " is above MPI's int count limit " + std::to_string(INT_MAX));
    }
  }

  void issue(const Call& call) override {
    const int count = static_cast<int>(call.shape->count);
    switch (collective_) {
      case Collective::kAllReduce:
        MPI_Allreduce(call.inPlace ? MPI_IN_PLACE : call.send, call.base, count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        break;
      case Collective::kAllGather:
        if (call.inPlace) {
          MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, call.base, count, MPI_FLOAT,
                        MPI_COMM_WORLD);
        } else {
          MPI_Allgather(call.send, count, MPI_FLOAT, call.recv, count, MPI_FLOAT, MPI_COMM_WORLD);
        }
        break;
      case Collective::kReduceScatter:
        MPI_Reduce_scatter_block(call.inPlace ? MPI_IN_PLACE : call.send, call.base, count,
                                 MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Collective::kBroadcast:
        if (!call.inPlace && rank_ == root_ && count > 0) {
          std::memcpy(call.recv, call.send, call.shape->count * sizeof(float));
        }
        MPI_Bcast(call.base, count, MPI_FLOAT, root_, MPI_COMM_WORLD);
        break;
    }
  }

  const float* result(const Call& call) const override {
    // MPI_IN_PLACE reduce-scatter leaves this rank's block at the start of the buffer.
    if (call.inPlace && collective_ == Collective::kReduceScatter) return call.base;
    return call.recv;
  }

  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

  double combine(double value, TimeCombine how) override {
    double result = value;
    switch (how) {
      case TimeCombine::kRank0:
        break;
      case TimeCombine::kMean:
        MPI_Reduce(&value, &result, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        result /= size_;
        break;
      case TimeCombine::kMin:
        MPI_Reduce(&value, &result, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        break;
      case TimeCombine::kMax:
        MPI_Reduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        break;
    }
    return result;
  }

  int64_t sum(int64_t value) override {
    int64_t result = 0;
    MPI_Allreduce(&value, &result, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return result;
  }

 private:
  Collective collective_;
  int root_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    const peers::Options options = peers::parseOptions(argc, argv, /*wantsStore=*/false);
    if (options.help) {
      if (rank == 0) std::fputs(peers::usage(argv[0]).c_str(), stdout);
      MPI_Finalize();
      return 0;
    }
    MpiBackend backend(options.collective, options.root);
    status = peers::runPerf(backend, options, "mpi_perf", stdout);
  } catch (const peers::UsageError& e) {
    // Every rank parses the same arguments, so every rank stops here; rank 0 says why.
    if (rank == 0) std::fprintf(stderr, "mpi_perf: %s\n", e.what());
    MPI_Finalize();
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_perf: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
