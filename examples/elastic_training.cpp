// elastic_training: data-parallel SGD on a toy linear model that survives ranks dying.
//
// Every rank holds the same weights, computes the gradient of the squared error on its shard
// of a synthetic data set (sample i belongs to rank i mod size) and allreduce-sums it; the
// sum divided by the data set size is the full-batch gradient, the same on every rank. When
// a rank dies, the survivors' allreduce fails; they shrink the communicator to the survivors,
// agree on the last step that completed everywhere (a survivor may have finished a step that
// another one lost: a collective that completed on one rank may still be in flight on
// another), roll back to it, re-shard over the survivors and carry on. At the end every
// survivor prints the final loss and weights, and an allreduce of max and min checks they
// are bit-identical everywhere.
//
// Who dies is scripted: GROVE_EXAMPLE_KILL="STEP:RANK,..." makes the process that started as
// RANK raise SIGKILL at the start of STEP. The survivors read the same variable to know whom
// to exclude: grove's shrink takes the failed ranks from the application (as NCCL's does),
// which in a real job comes from its launcher or elastic agent.
//
// Usage: elastic_training [STEPS]   (launched like any grove program; see docs/failures.md)
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "grove/communicator.hpp"
#include "grove/error.hpp"

namespace {

constexpr int kDim = 8;
constexpr int kSamples = 4096;
constexpr double kRate = 0.1;

// A deterministic pseudo-random number in [-1, 1) for (i, j): every rank makes the same data.
double noise(uint64_t i, uint64_t j) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (j + 7) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

struct Sample {
  double x[kDim];
  double y;
};

std::vector<Sample> makeData() {
  std::vector<Sample> data(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    double y = 0;
    for (int j = 0; j < kDim; ++j) {
      data[i].x[j] = noise(i, j);
      y += (j + 1) * 0.5 * data[i].x[j];  // the true weights: 0.5, 1.0, ..., 4.0
    }
    data[i].y = y + 0.01 * noise(i, 99);
  }
  return data;
}

// STEP -> original rank, from GROVE_EXAMPLE_KILL="STEP:RANK,...".
std::map<int, int> killSchedule() {
  std::map<int, int> kills;
  const char* text = std::getenv("GROVE_EXAMPLE_KILL");
  if (text == nullptr) return kills;
  std::string s = text;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(at, end - at);
    size_t colon = item.find(':');
    if (colon != std::string::npos) {
      kills[std::atoi(item.substr(0, colon).c_str())] = std::atoi(item.substr(colon + 1).c_str());
    }
    at = end + 1;
  }
  return kills;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::map<int, int> kills = killSchedule();
  const std::vector<Sample> data = makeData();
  try {
    grove::Communicator comm = grove::Communicator::fromEnv();
    const int me = comm.rank();  // the original rank, kept for the whole run
    std::vector<int> members;    // original ranks of comm's ranks
    for (int r = 0; r < comm.size(); ++r) members.push_back(r);
    std::vector<int> dead;  // original ranks known dead
    // Weights after each completed step: a survivor may be one step ahead of another.
    std::map<int, std::vector<double>> history;
    history[0] = std::vector<double>(kDim, 0.0);
    double loss = 0;
    int step = 0;
    while (step < steps) {
      auto kill = kills.find(step);
      if (kill != kills.end() && kill->second == me) {
        std::printf("rank %d: dying at step %d\n", me, step);
        std::fflush(stdout);
        raise(SIGKILL);
      }
      const std::vector<double>& w = history[step];
      try {
        // Gradient and loss on this rank's shard (samples i with i mod size == rank).
        std::vector<double> sums(kDim + 1, 0.0);
        for (int i = comm.rank(); i < kSamples; i += comm.size()) {
          double error = -data[i].y;
          for (int j = 0; j < kDim; ++j) error += w[j] * data[i].x[j];
          for (int j = 0; j < kDim; ++j) sums[j] += error * data[i].x[j];
          sums[kDim] += error * error;
        }
        comm.allReduce(sums.data(), sums.data(), sums.size(), grove::DataType::kFloat64,
                       grove::ReduceOp::kSum);
        // An exact check of every step: who took part.
        int64_t who[2] = {1, me};
        comm.allReduce(who, who, 2, grove::DataType::kInt64, grove::ReduceOp::kSum);
        int64_t expected = 0;
        for (int r : members) expected += r;
        if (who[0] != comm.size() || who[1] != expected) {
          std::printf("corrupt rank %d step %d: %lld ranks, rank sum %lld (expected %d, %lld)\n",
                      me, step, static_cast<long long>(who[0]), static_cast<long long>(who[1]),
                      comm.size(), static_cast<long long>(expected));
          return 4;
        }
        std::vector<double> next(kDim);
        for (int j = 0; j < kDim; ++j) next[j] = w[j] - kRate * sums[j] / kSamples;
        loss = sums[kDim] / kSamples;
        history[step + 1] = std::move(next);
        history.erase(step - 1);
        ++step;
      } catch (const grove::Error& error) {
        // Who died: the schedule's victims up to this step that are still members.
        std::vector<int> excluded;
        for (const auto& [killStep, victim] : kills) {
          auto at = std::find(members.begin(), members.end(), victim);
          if (killStep <= step + 1 && at != members.end()) {
            excluded.push_back(static_cast<int>(at - members.begin()));
            dead.push_back(victim);
          }
        }
        std::printf("rank %d: step %d failed (%s); shrinking without %zu rank(s)\n", me, step,
                    toString(error.code()).data(), excluded.size());
        std::fflush(stdout);
        grove::Communicator smaller = comm.shrink(excluded);
        std::vector<int> survivors;
        for (int r : members) {
          if (std::find(dead.begin(), dead.end(), r) == dead.end()) survivors.push_back(r);
        }
        members = survivors;
        comm = std::move(smaller);
        // Resume from the last step every survivor completed.
        int64_t last = step;
        comm.allReduce(&last, &last, 1, grove::DataType::kInt64, grove::ReduceOp::kMin);
        if (last != step) history.erase(step);
        step = static_cast<int>(last);
        std::printf("rank %d: now rank %d of %d, resuming at step %d\n", me, comm.rank(),
                    comm.size(), step);
        std::fflush(stdout);
      }
    }
    // Bit-identical everywhere: max and min over the survivors of every value agree.
    const std::vector<double>& w = history[step];
    std::vector<double> values(w);
    values.push_back(loss);
    std::vector<double> high(values.size());
    std::vector<double> low(values.size());
    comm.allReduce(values.data(), high.data(), values.size(), grove::DataType::kFloat64,
                   grove::ReduceOp::kMax);
    comm.allReduce(values.data(), low.data(), values.size(), grove::DataType::kFloat64,
                   grove::ReduceOp::kMin);
    const bool identical =
        std::memcmp(high.data(), low.data(), high.size() * sizeof(double)) == 0 &&
        std::memcmp(high.data(), values.data(), high.size() * sizeof(double)) == 0;
    std::printf("rank %d (now %d of %d): step %d loss %.17g weights", me, comm.rank(), comm.size(),
                step, loss);
    for (double v : w) std::printf(" %.17g", v);
    std::printf("\nrank %d: identical on all %d survivors: %s\n", me, comm.size(),
                identical ? "yes" : "NO");
    return identical ? 0 : 4;
  } catch (const std::exception& error) {
    std::printf("rank failed: %s\n", error.what());
    return 3;
  }
}
