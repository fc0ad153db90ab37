// A process-wide table of in-process groups being formed, keyed by the unique id's bytes.
#include "core/inproc_rendezvous.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm_state.hpp"
#include "transport/inproc/inproc_transport.hpp"

namespace grove::detail {
namespace {

struct Forming {
  int nranks = 0;
  std::vector<bool> joined;
  int remaining = 0;
  std::shared_ptr<transport::InprocWorld> world;
  Config config;
};

std::mutex gMutex;
std::condition_variable gChanged;
std::map<std::string, std::shared_ptr<Forming>> gForming;

}  // namespace

Communicator joinInProcessGroup(std::string_view key, int nranks, int rank,
                                std::chrono::milliseconds timeout) {
  if (nranks < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove commInitRank: nranks is {} (expected at least 1)", nranks));
  }
  if (rank < 0 || rank >= nranks) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove commInitRank: rank {} is out of range (expected 0..{})", rank,
                            nranks - 1));
  }
  std::unique_lock lock(gMutex);
  auto& slot = gForming[std::string(key)];
  if (!slot) {
    slot = std::make_shared<Forming>();
    slot->nranks = nranks;
    slot->joined.assign(nranks, false);
    slot->remaining = nranks;
    slot->config = Config::fromEnvironment();
    slot->world = std::make_shared<transport::InprocWorld>(
        nranks, transport::FifoGeometry{slot->config.slotBytes, slot->config.fifoDepth});
  }
  std::shared_ptr<Forming> group = slot;
  if (group->nranks != nranks) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove commInitRank (rank {}): nranks {} disagrees with the {} "
                            "given by the first rank that joined this id",
                            rank, nranks, group->nranks));
  }
  if (group->joined[rank]) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove commInitRank: rank {} joined this id twice", rank));
  }
  group->joined[rank] = true;
  if (--group->remaining == 0) {
    gForming.erase(std::string(key));
    gChanged.notify_all();
  } else {
    bool complete = gChanged.wait_for(lock, timeout, [&] { return group->remaining == 0; });
    if (!complete) {
      std::string missing;
      for (int q = 0; q < nranks; ++q) {
        if (!group->joined[q]) missing += (missing.empty() ? "" : ", ") + std::to_string(q);
      }
      group->joined[rank] = false;
      ++group->remaining;
      throw Error(ErrorCode::kTimeout,
                  fmt::format("grove commInitRank (rank {} of {}): ranks {} did not join within "
                              "{} ms",
                              rank, nranks, missing, timeout.count()));
    }
  }
  lock.unlock();
  auto state = std::make_shared<CommState>(
      std::make_unique<transport::InprocTransport>(group->world, rank), group->config);
  return Communicator::fromState(std::move(state));
}

}  // namespace grove::detail
