// Recovery after a failure: revoke() quiesces a communicator, shrink() makes a new one among
// the survivors.
//
// Why shrink does not go through split(): split agrees on membership with an allGather over
// the communicator being split, which cannot run once a member died or the communicator
// failed. shrink sends nothing over the old communicator: every survivor derives the same
// membership from the excluded list it is given, and the transport's split makes fresh
// connections among exactly those ranks, under a key (the split sequence and a color derived
// from the list) that split()'s non-negative colors never use. Survivors that disagree on the
// list derive different colors and never meet: each group waits for members that went
// elsewhere and fails at its deadline (the process transport's ready barrier, or the check
// call below) instead of forming a communicator with the wrong members. The new communicator
// has its own state, so the old one's failure does not carry over.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/comm_state.hpp"
#include "core/comm_topology.hpp"
#include "grove/communicator.hpp"

namespace grove {
namespace {

std::string rankList(std::span<const int> ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "}";
}

/// FNV-1a over the communicator size and the sorted excluded ranks: equal on every survivor
/// that was given the same list.
uint64_t membershipHash(int size, std::span<const int> sortedExcluded) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (value >> (8 * byte)) & 0xff;
      hash *= 0x100000001b3ull;
    }
  };
  mix(static_cast<uint64_t>(size));
  for (int r : sortedExcluded) mix(static_cast<uint64_t>(r));
  return hash;
}

/// The transport split color of a shrink: negative (split() colors are >= 0) and distinct
/// for distinct lists (up to a 2^-30 collision, which the check call then reports).
int shrinkColor(uint64_t hash) { return -2 - static_cast<int>(hash % (uint64_t{1} << 30)); }

}  // namespace

void Communicator::revoke() {
  detail::CommState& s = state();
  detail::CallGuard guard(s, "revoke", 0);
  s.revoke();
}

Communicator Communicator::shrink(std::span<const int> excludedRanks) {
  detail::CommState& s = state();
  detail::CallGuard guard(s, "shrink", 0);
  const int me = s.rank();
  const int n = s.size();
  auto invalid = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove shrink (rank {} of {}): {}", me, n, what));
  };
  if (excludedRanks.size() >= static_cast<size_t>(n)) {
    invalid(
        fmt::format("excludedRanks has {} entries (expected at most {}: the ranks that leave, "
                    "never this rank)",
                    excludedRanks.size(), n - 1));
  }
  std::vector<bool> listed(static_cast<size_t>(n), false);
  for (size_t i = 0; i < excludedRanks.size(); ++i) {
    const int r = excludedRanks[i];
    if (r < 0 || r >= n) {
      invalid(fmt::format("excludedRanks[{}] is {}, out of range (expected 0..{})", i, r, n - 1));
    }
    if (r == me) {
      invalid(
          fmt::format("excludedRanks[{}] is {}, this rank itself (a rank that calls shrink "
                      "survives; expected only the ranks that leave)",
                      i, r));
    }
    if (listed[static_cast<size_t>(r)]) {
      invalid(fmt::format("excludedRanks[{}] is {}, listed twice (expected distinct ranks)", i, r));
    }
    listed[static_cast<size_t>(r)] = true;
  }
  if (s.inGroup()) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("grove shrink (rank {} of {}): cannot shrink inside a group", me, n));
  }
  std::vector<int> excluded(excludedRanks.begin(), excludedRanks.end());
  std::sort(excluded.begin(), excluded.end());
  std::vector<int> survivors;
  int newRank = 0;
  for (int q = 0; q < n; ++q) {
    if (listed[static_cast<size_t>(q)]) continue;
    if (q == me) newRank = static_cast<int>(survivors.size());
    survivors.push_back(q);
  }
  const uint64_t sequence = s.nextSplitSequence();
  const uint64_t hash = membershipHash(n, excluded);
  auto context = [&](const Error& e) {
    return Error(e.code(),
                 fmt::format("grove shrink (rank {} of {}) excluding {}: the survivors {} did not "
                             "all join (every survivor must call shrink with the same excluded "
                             "ranks): {}",
                             me, n, rankList(excluded), rankList(survivors), e.what()));
  };
  std::unique_ptr<transport::Transport> transport;
  try {
    transport = s.transport().split(sequence, shrinkColor(hash), survivors, newRank);
  } catch (const Error& e) {
    throw context(e);
  }
  Communicator result(std::make_shared<detail::CommState>(
      std::move(transport), s.config(), detail::subsetTopology(s.topology(), survivors, newRank)));
  // Every member confirms its old rank and list: a survivor that was given another list never
  // arrives here, so the call fails at its deadline instead of returning a communicator whose
  // first collective would hang.
  const int64_t mine[2] = {static_cast<int64_t>(hash), me};
  std::vector<int64_t> all(2 * survivors.size());
  try {
    result.allGather(mine, all.data(), 2, DataType::kInt64);
  } catch (const Error& e) {
    throw context(e);
  }
  for (size_t i = 0; i < survivors.size(); ++i) {
    if (static_cast<uint64_t>(all[2 * i]) != hash || all[2 * i + 1] != survivors[i]) {
      result.abort();
      throw Error(ErrorCode::kInvalidUsage,
                  fmt::format("grove shrink (rank {} of {}) excluding {}: new rank {} is old rank "
                              "{} with list hash {:#x}, expected old rank {} with {:#x}",
                              me, n, rankList(excluded), i, all[2 * i + 1],
                              static_cast<uint64_t>(all[2 * i]), survivors[i], hash));
    }
  }
  return result;
}

}  // namespace grove
