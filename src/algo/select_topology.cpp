// Predictions for selection on a topology, memoized.
//
// A prediction replays all ranks' plans, which costs far more than an α–β formula, so each
// one is computed once per process for a (topology, algorithm, shape, size bucket) and then
// shared: ranks running as threads of one process hit the same cache, and because the
// simulated size depends only on the bucket, whichever rank computes an entry, every rank
// reads the same value and therefore makes the same choice.
#include "algo/select_topology.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "grove/error.hpp"
#include "topo/topology.hpp"

namespace grove::algo {
namespace {

constexpr size_t kMaxEntries = 4096;

/// FNV-1a over everything of a topology that the simulator reads.
class Fingerprint {
 public:
  void add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ = (hash_ ^ bytes[i]) * 1099511628211ull;
    }
  }
  template <typename T>
  void add(const T& value) {
    add(&value, sizeof value);
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

uint64_t fingerprint(const topo::Topology& topology) {
  Fingerprint f;
  f.add(topology.vertices.size());
  for (const topo::Vertex& v : topology.vertices) {
    f.add(static_cast<int>(v.kind));
    f.add(v.rank);
  }
  f.add(topology.arcs.size());
  for (const topo::Arc& a : topology.arcs) {
    f.add(a.from);
    f.add(a.to);
    f.add(a.capacityGBps);
    f.add(a.latencyUs);
    f.add(static_cast<int>(a.kind));  // Network arcs carry compressed bytes (replay.cpp).
    f.add(a.lineRate);                // A line rate carries TCP's payload share (wire.cpp).
  }
  return f.value();
}

using Key = std::tuple<uint64_t, std::string, int, int, int, int, size_t, size_t, int, double,
                       double, double, double, double, uint64_t>;

/// FNV-1a over the shared CPUs the simulator models (SimOptions::cpuGroup, groupCpus).
uint64_t cpuFingerprint(const model::SimOptions& options) {
  Fingerprint f;
  f.add(options.cpuGroup.size());
  for (int g : options.cpuGroup) f.add(g);
  f.add(options.groupCpus.size());
  for (double cpus : options.groupCpus) f.add(cpus);
  return f.value();
}

/// A memoized prediction, or why there is none.
struct Entry {
  double timeUs = 0;
  std::string error;
};

std::mutex gMutex;
std::map<Key, Entry> gCache;

}  // namespace

model::SimOptions selectionSimOptions(const CostParams& params, const topo::Topology* topology) {
  model::SimOptions options;
  // The communicator's tile and FIFO geometry (its GROVE_SLOT_BYTES and GROVE_FIFO_DEPTH,
  // passed in `params`), so that what is predicted and chosen is what runs.
  options.tileBytes = static_cast<size_t>(params.tileBytes);
  options.fifoDepth = static_cast<int>(params.fifoDepth);
  options.reduceGBps = params.reduceGBps;
  // A topology that knows its ranks' local speed (GPU presets) overrides the CPU's.
  if (topology != nullptr && topology->localGBps > 0) {
    options.reduceGBps = topology->localGBps;
    options.copyGBps = topology->localGBps;
  }
  return options;
}

size_t sizeBucket(size_t count) {
  if (count <= 4) return count;
  const int shift = std::bit_width(count) - 3;  // count >> shift is in 4..7.
  const size_t mantissa = count >> shift;
  const size_t bucket = mantissa << shift;
  if (bucket == count) return count;
  if (mantissa == 7) return size_t{8} << shift;
  return (mantissa + 1) << shift;
}

double predictedUs(const Algorithm& algorithm, const plan::PlanRequest& request,
                   const model::SimOptions& options) {
  if (request.topology == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("predictedUs: {} {} (rank {}) has no topology", algorithm.name,
                            plan::toString(request.collective), request.rank));
  }
  const topo::Topology& topology = *request.topology;
  const size_t elementSize = dataTypeSize(request.type);
  const size_t count = sizeBucket(request.count);
  const Key key{fingerprint(topology),
                std::string(algorithm.name),
                static_cast<int>(request.collective),
                request.nranks,
                request.root,
                static_cast<int>(elementSize),
                count,
                options.tileBytes,
                options.fifoDepth,
                options.reduceGBps,
                options.copyGBps,
                options.stepOverheadUs,
                options.compressionRatio,
                options.codecGBps,
                cpuFingerprint(options)};

  std::lock_guard<std::mutex> lock(gMutex);
  auto found = gCache.find(key);
  if (found == gCache.end()) {
    Entry entry;
    try {
      std::vector<plan::Plan> plans;
      plans.reserve(static_cast<size_t>(request.nranks));
      for (int r = 0; r < request.nranks; ++r) {
        plan::PlanRequest other = request;
        other.rank = r;
        other.count = count;
        plans.push_back(algorithm.build(other));
      }
      model::SimOptions sized = options;
      if (!plans.empty() && plans[0].oneSided) sized.tileBytes = plan::kOneSidedTileBytes;
      sized.bytes = count * elementSize;
      sized.elementSize = elementSize;
      entry.timeUs = model::simulate(plans, topology, sized).timeUs;
    } catch (const Error& error) {
      entry.error = error.what();
    }
    if (gCache.size() >= kMaxEntries) gCache.clear();
    found = gCache.emplace(key, std::move(entry)).first;
  }
  if (!found->second.error.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} {} on topology \"{}\" (rank {}): {}", algorithm.name,
                            plan::toString(request.collective), topology.name, request.rank,
                            found->second.error));
  }
  return found->second.timeUs;
}

double topologyCostUs(const Algorithm& algorithm, const plan::PlanRequest& request,
                      const CostParams& params) {
  try {
    return predictedUs(algorithm, request, selectionSimOptions(params, request.topology));
  } catch (const Error&) {
    return std::numeric_limits<double>::infinity();
  }
}

}  // namespace grove::algo
