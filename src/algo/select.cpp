// Algorithm selection: a per-call choice, then GROVE_ALGO, then the cost model.
//
// Every applicable generator's α–β cost is estimated and the cheapest wins, so the default
// adapts to message size and rank count (recursive doubling for small allreduce, the ring
// for large). Users override it the way they override NCCL: a per-call option names one
// algorithm and must be valid (an error otherwise: a typo should not silently fall back),
// while GROVE_ALGO, read once for the whole process, only narrows the field and never makes
// a call fail — names that do not apply to a collective are ignored, and when nothing is
// left the cheapest algorithm runs and the reason says so.
//
// With a topology (request.topology set) the cost is the simulator's prediction of the
// plans on that topology (select_topology.hpp) instead of the α–β estimate.
//
// GROVE_ALGO syntax (NCCL_ALGO's): sections separated by ';', names within a section by
// ','. A name written "collective:name" applies to that collective only, and so do the
// names after it in the same section ("allreduce:tree,ring;broadcast:chain"). A list whose
// first name starts with '^' excludes its names instead ("^tree", "allreduce:^ring"). A
// collective's own list overrides the list for all collectives. Matching ignores case.
#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "algo/names.hpp"
#include "algo/registry.hpp"
#include "algo/select_topology.hpp"
#include "grove/error.hpp"

namespace grove::algo {
namespace {

constexpr int kAllCollectives = -1;  // Scope of a list that names no collective.
constexpr int kNoCollective = -2;    // Scope of names after an unknown "collective:".

/// One include or exclude list, for one collective or for all.
struct NameList {
  bool set = false;
  bool exclude = false;
  std::vector<std::string> names;
};

/// What GROVE_ALGO says, per collective.
struct AlgoPolicy {
  NameList all;
  std::array<NameList, plan::kCollectiveCount> perCollective;
};

std::string_view trim(std::string_view text) {
  const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

int collectiveIndex(std::string_view name) {
  const std::string lower = lowerCase(trim(name));
  for (int c = 0; c < plan::kCollectiveCount; ++c) {
    if (lower == plan::toString(static_cast<plan::Collective>(c))) return c;
  }
  return kNoCollective;
}

AlgoPolicy parsePolicy(std::string_view text) {
  struct Pending {
    int scope;
    NameList list;
  };
  std::vector<Pending> lists;
  for (std::string_view section : split(text, ';')) {
    int scope = kAllCollectives;
    bool fresh = true;  // The next name starts a new list.
    for (std::string_view token : split(section, ',')) {
      token = trim(token);
      if (const size_t colon = token.find(':'); colon != std::string_view::npos) {
        scope = collectiveIndex(token.substr(0, colon));
        token = trim(token.substr(colon + 1));
        fresh = true;
      }
      if (token.empty()) continue;
      if (fresh) {
        lists.push_back({scope, NameList{true, token.front() == '^', {}}});
        fresh = false;
      }
      if (token.front() == '^') token = trim(token.substr(1));
      if (!token.empty()) lists.back().list.names.emplace_back(token);
    }
  }
  AlgoPolicy policy;
  for (const Pending& pending : lists) {
    if (pending.scope == kNoCollective) continue;
    NameList& target = pending.scope == kAllCollectives
                           ? policy.all
                           : policy.perCollective[static_cast<size_t>(pending.scope)];
    if (target.set && target.exclude == pending.list.exclude) {
      target.names.insert(target.names.end(), pending.list.names.begin(), pending.list.names.end());
    } else {
      target = pending.list;
    }
  }
  return policy;
}

bool listed(const NameList& list, plan::Collective collective, std::string_view name) {
  for (const std::string& entry : list.names) {
    if (canonicalName(collective, entry) == name) return true;
  }
  return false;
}

std::string validNames(plan::Collective collective) {
  std::string names;
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != collective) continue;
    if (!names.empty()) names += ", ";
    names += algorithm.name;
    for (std::string_view alias : {"tree", "rd"}) {
      if (canonicalName(collective, alias) == algorithm.name) names += fmt::format(" ({})", alias);
    }
  }
  return names.empty() ? std::string("none") : names;
}

/// One registered algorithm of the collective, as judged for this request.
struct Candidate {
  const Algorithm* algorithm = nullptr;
  bool applies = false;
  std::string why;  // When it does not apply.
  double costUs = 0;
  bool allowed = true;  // By GROVE_ALGO.
};

std::string describe(const std::vector<Candidate>& candidates) {
  std::string text;
  for (const Candidate& c : candidates) {
    if (!text.empty()) text += ", ";
    if (!c.applies) {
      text += fmt::format("{} n/a: {}", c.algorithm->name, c.why);
    } else {
      text += fmt::format("{} {:.2f} us{}", c.algorithm->name, c.costUs,
                          c.allowed ? "" : " (not allowed by GROVE_ALGO)");
    }
  }
  return text;
}

}  // namespace

Selection select(const plan::PlanRequest& request, std::string_view forced,
                 std::string_view envAlgo, const CostParams& params) {
  const plan::Collective collective = request.collective;
  const char* collectiveName = plan::toString(collective);
  forced = trim(forced);

  if (!forced.empty()) {
    const Algorithm* algorithm = findAlgorithm(collective, forced);
    if (algorithm == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("algorithm \"{}\" (rank {}) is not known for {}; valid names: {}",
                              forced, request.rank, collectiveName, validNames(collective)));
    }
    if (Status applies = algorithm->applies(request); !applies.ok()) {
      throw Error(
          ErrorCode::kInvalidArgument,
          fmt::format("algorithm \"{}\" (rank {}) does not apply to {} on {} ranks: {}", forced,
                      request.rank, collectiveName, request.nranks, applies.message()));
    }
    return {algorithm, fmt::format("{}: forced by call option, {:.2f} us", algorithm->name,
                                   algorithm->costUs(request, params))};
  }

  const AlgoPolicy policy = parsePolicy(envAlgo);
  const NameList& rule = policy.perCollective[static_cast<size_t>(collective)].set
                             ? policy.perCollective[static_cast<size_t>(collective)]
                             : policy.all;
  std::vector<Candidate> candidates;
  for (const Algorithm& algorithm : algorithms()) {
    if (algorithm.collective != collective) continue;
    Candidate& c = candidates.emplace_back();
    c.algorithm = &algorithm;
    const Status applies = algorithm.applies(request);
    c.applies = applies.ok();
    c.why = applies.message();
    if (c.applies) {
      c.costUs = request.topology != nullptr ? topologyCostUs(algorithm, request, params)
                                             : algorithm.costUs(request, params);
    }
    if (rule.set) c.allowed = listed(rule, collective, algorithm.name) != rule.exclude;
  }

  const auto cheapest = [&](bool onlyAllowed) -> const Candidate* {
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates) {
      if (!c.applies || (onlyAllowed && !c.allowed)) continue;
      if (best == nullptr || c.costUs < best->costUs) best = &c;
    }
    return best;
  };

  if (const Candidate* best = cheapest(true); best != nullptr) {
    const std::string basis =
        rule.set ? fmt::format("cheapest allowed by GROVE_ALGO=\"{}\"", envAlgo) : "cheapest";
    return {best->algorithm, fmt::format("{}: {}, {:.2f} us ({})", best->algorithm->name, basis,
                                         best->costUs, describe(candidates))};
  }
  if (const Candidate* best = cheapest(false); best != nullptr) {
    return {best->algorithm, fmt::format("{}: cheapest; GROVE_ALGO=\"{}\" allows nothing that "
                                         "applies to {}, "
                                         "{:.2f} us ({})",
                                         best->algorithm->name, envAlgo, collectiveName,
                                         best->costUs, describe(candidates))};
  }
  throw Error(
      ErrorCode::kInvalidArgument,
      fmt::format("no algorithm applies to {} on {} ranks (rank {}): {}", collectiveName,
                  request.nranks, request.rank,
                  candidates.empty() ? std::string("none is registered") : describe(candidates)));
}

}  // namespace grove::algo
