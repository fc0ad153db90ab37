// gloo_perf: grove perf's measurement and table for Gloo (PyTorch's CPU backend), so users can
// set it beside grove row for row. Ranks are separate processes, started by `grove run -n N`
// or by hand: the rank and size come from GROVE_RANK / GROVE_WORLD_SIZE (torchrun's RANK /
// WORLD_SIZE also work). Gloo 0.5 as Debian ships it has file, hash and Redis stores but no
// TCP store, so the ranks meet through a gloo::rendezvous::FileStore in a directory given by
// --store DIR or GLOO_STORE_DIR, under a key prefix that is grove run's GROVE_JOB_ID (or
// GLOO_PREFIX), and connect over the TCP transport on 127.0.0.1. The calls:
//   allreduce      gloo::allreduce (its default algorithm, ring), reduce function gloo::sum
//   allgather      gloo::allgather; in place = no input buffer (own block at rank*count);
//                  a count of 0 is not called (Gloo 0.5 dies of SIGFPE on it)
//   broadcast      gloo::broadcast; out of place = an input buffer at the root
//   reducescatter  Gloo 0.5 has only the old-style ReduceScatterHalvingDoubling, which works
//                  in place on one buffer and leaves the result at its start (checked there).
//                  Out of place is what a user must write to keep the input: copy the input
//                  into a scratch buffer, run, copy the block out; both copies are timed.
// Options objects and algorithm instances are built once per size and placement, outside the
// timed loop (the best case for Gloo). See bench/README.md ("Peers").
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer_runner.hpp"

namespace {

using peers::Call;
using peers::Collective;
using peers::TimeCombine;
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

/// Per-operation deadline: generous, since 2 ranks on a loaded 2-core machine are slow.
constexpr std::chrono::seconds kTimeout{120};

/// An integer environment variable, or -1 when unset or not a number.
int envInt(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  return (*end == '\0' && v >= 0 && v < (1L << 20)) ? static_cast<int>(v) : -1;
}

std::string envString(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr ? text : "";
}

class GlooBackend : public peers::Backend {
 public:
  GlooBackend(std::shared_ptr<gloo::Context> context, Collective collective, int root,
              size_t scratchElements)
      : context_(std::move(context)),
        collective_(collective),
        root_(root),
        scratch_(collective == Collective::kReduceScatter ? scratchElements * sizeof(float) : 0) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  std::string library() const override {
    return "gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
           "." + std::to_string(GLOO_VERSION_PATCH);
  }
  std::string algorithm() const override {
    switch (collective_) {
      case Collective::kAllReduce:
        return "gloo::allreduce (its default: ring)";
      case Collective::kAllGather:
        return "gloo::allgather";
      case Collective::kReduceScatter:
        return "gloo::ReduceScatterHalvingDoubling";
      case Collective::kBroadcast:
        return "gloo::broadcast";
    }
    return "gloo";
  }

  std::vector<peers::RankLine> rankLines() override {
    struct Record {
      int32_t pid;
      char host[60];
    };
    Record mine{};
    mine.pid = static_cast<int32_t>(getpid());
    std::snprintf(mine.host, sizeof(mine.host), "%s", peers::hostName().c_str());
    std::vector<Record> all(static_cast<size_t>(size()));
    gloo::AllgatherOptions opts(context_);
    opts.setInput(reinterpret_cast<uint8_t*>(&mine), sizeof(Record));
    opts.setOutput(reinterpret_cast<uint8_t*>(all.data()), sizeof(Record) * all.size());
    gloo::allgather(opts);
    std::vector<peers::RankLine> lines;
    for (int r = 0; r < size(); ++r) lines.push_back({r, all[r].pid, all[r].host, "tcp"});
    return lines;
  }

  void prepare(const Call& call) override {
    const size_t count = call.shape->count;
    const size_t n = static_cast<size_t>(size());
    allreduce_.reset();
    allgather_.reset();
    broadcast_.reset();
    reduceScatter_.reset();
    switch (collective_) {
      case Collective::kAllReduce:
        allreduce_ = std::make_unique<gloo::AllreduceOptions>(context_);
        if (!call.inPlace) allreduce_->setInput(call.send, count);
        allreduce_->setOutput(call.base, count);
        allreduce_->setReduceFunction(ReduceFn{&gloo::sum<float>});
        break;
      case Collective::kAllGather:
        allgather_ = std::make_unique<gloo::AllgatherOptions>(context_);
        if (!call.inPlace) allgather_->setInput(call.send, count);
        allgather_->setOutput(call.base, count * n);
        break;
      case Collective::kBroadcast:
        broadcast_ = std::make_unique<gloo::BroadcastOptions>(context_);
        broadcast_->setRoot(root_);
        if (!call.inPlace && rank() == root_) broadcast_->setInput(call.send, count);
        broadcast_->setOutput(call.base, count);
        break;
      case Collective::kReduceScatter: {
        if (count * n > static_cast<size_t>(INT32_MAX)) {
          throw peers::UsageError("-e/--maxbytes: " + std::to_string(count * n) +
                                  " elements exceed Gloo's int count");
        }
        float* work = call.inPlace ? call.base : scratch_.data();
        reduceScatter_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
            context_, std::vector<float*>{work}, static_cast<int>(count * n),
            std::vector<int>(n, static_cast<int>(count)));
        break;
      }
    }
  }

  void issue(const Call& call) override {
    switch (collective_) {
      case Collective::kAllReduce:
        gloo::allreduce(*allreduce_);
        break;
      case Collective::kAllGather:
        // gloo::allgather divides by the block size: 0 elements raise SIGFPE. Nothing moves.
        if (call.shape->count != 0) gloo::allgather(*allgather_);
        break;
      case Collective::kBroadcast:
        gloo::broadcast(*broadcast_);
        break;
      case Collective::kReduceScatter: {
        const size_t count = call.shape->count;
        if (call.inPlace) {
          reduceScatter_->run();
        } else {
          if (call.shape->sendCount != 0) {
            std::memcpy(scratch_.data(), call.send, call.shape->sendCount * sizeof(float));
          }
          reduceScatter_->run();
          if (count != 0) std::memcpy(call.recv, scratch_.data(), count * sizeof(float));
        }
        break;
      }
    }
  }

  const float* result(const Call& call) const override {
    if (call.inPlace && collective_ == Collective::kReduceScatter) return call.base;
    return call.recv;
  }

  void barrier() override {
    gloo::BarrierOptions opts(context_);
    gloo::barrier(opts);
  }

  double combine(double value, TimeCombine how) override {
    if (how == TimeCombine::kRank0) return value;
    double result = value;
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(&result, 1);
    ReduceFn fn = &gloo::sum<double>;
    if (how == TimeCombine::kMin) fn = &gloo::min<double>;
    if (how == TimeCombine::kMax) fn = &gloo::max<double>;
    opts.setReduceFunction(fn);
    gloo::allreduce(opts);
    return how == TimeCombine::kMean ? result / size() : result;
  }

  int64_t sum(int64_t value) override {
    int64_t result = value;
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(&result, 1);
    opts.setReduceFunction(ReduceFn{&gloo::sum<int64_t>});
    gloo::allreduce(opts);
    return result;
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  Collective collective_;
  int root_;
  peers::AlignedBuffer scratch_;  ///< Out-of-place reducescatter's working copy.
  std::unique_ptr<gloo::AllreduceOptions> allreduce_;
  std::unique_ptr<gloo::AllgatherOptions> allgather_;
  std::unique_ptr<gloo::BroadcastOptions> broadcast_;
  std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> reduceScatter_;
};

/// Connects this process to the others through the FileStore in `dir`.
std::shared_ptr<gloo::Context> connect(int rank, int size, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::string prefix = envString("GLOO_PREFIX");
  if (prefix.empty()) prefix = envString("GROVE_JOB_ID");
  if (prefix.empty()) prefix = "gloo_perf";
  // GLOO_SOCKET_ADDR: the address to listen on (an emulated host's); loopback by default.
  std::string address = envString("GLOO_SOCKET_ADDR");
  gloo::transport::tcp::attr attr(address.empty() ? "127.0.0.1" : address.c_str());
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fileStore(dir);
  gloo::rendezvous::PrefixStore store(prefix, fileStore);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(kTimeout);
  try {
    context->connectFullMesh(store, device);
  } catch (const std::exception& e) {
    // The usual cause: keys left in the directory by an earlier run under the same prefix.
    throw std::runtime_error("rendezvous in --store '" + dir + "' under prefix '" + prefix +
                             "' failed (use a fresh directory, or a prefix unique to this "
                             "run through GROVE_JOB_ID or GLOO_PREFIX): " +
                             e.what());
  }
  return context;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = envInt("GROVE_RANK");
  int size = envInt("GROVE_WORLD_SIZE");
  if (rank < 0 || size < 0) {
    rank = envInt("RANK");
    size = envInt("WORLD_SIZE");
  }
  try {
    peers::Options options = peers::parseOptions(argc, argv, /*wantsStore=*/true);
    if (options.help) {
      std::fputs(peers::usage(argv[0]).c_str(), stdout);
      return 0;
    }
    if (rank < 0 || size < 1 || rank >= size) {
      throw peers::UsageError(
          "GROVE_RANK/GROVE_WORLD_SIZE: expected 0 <= rank < size (start the ranks with "
          "`grove run -n N gloo_perf ...` or set both variables)");
    }
    if (options.collective == Collective::kBroadcast && options.root >= size) {
      throw peers::UsageError("-r/--root: " + std::to_string(options.root) +
                              " is out of range for " + std::to_string(size) +
                              " ranks (expected 0 <= root < " + std::to_string(size) + ")");
    }
    if (options.storeDir.empty()) options.storeDir = envString("GLOO_STORE_DIR");
    if (options.storeDir.empty()) {
      throw peers::UsageError(
          "--store: no rendezvous directory (pass --store DIR or set GLOO_STORE_DIR; every "
          "rank must name the same directory)");
    }
    size_t scratch = 0;
    for (const peers::Shape& s : peers::shapeSeries(options, rank, size)) {
      scratch = std::max(scratch, s.sendCount);
    }
    GlooBackend backend(connect(rank, size, options.storeDir), options.collective, options.root,
                        scratch);
    return peers::runPerf(backend, options, "gloo_perf", stdout);
  } catch (const peers::UsageError& e) {
    if (rank <= 0) std::fprintf(stderr, "gloo_perf: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_perf: rank %d: %s\n", rank, e.what());
    return 1;
  }
}
