// verify(): structure checks, then the replay, then the end-of-call checks (every message
// received, every output chunk holding exactly what the collective demands).
//
// The model is described in verifier.hpp and verifier_replay.hpp; the per-collective rules
// live in verifier_checks.cpp.
#include "plan/verifier.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plan/printer.hpp"
#include "plan/verifier_model.hpp"
#include "plan/verifier_replay.hpp"

namespace grove::plan {
namespace verifier_model {

Status Replay::checkFifosEmpty() const {
  const Message* first = nullptr;
  uint64_t firstKey = 0;
  for (const auto& [key, fifo] : fifos_) {
    if (!fifo.empty() && (first == nullptr || key < firstKey)) {
      first = &fifo.front();
      firstKey = key;
    }
  }
  if (first == nullptr) return Status();
  const auto lane = static_cast<uint16_t>(firstKey & 0xffff);
  const auto from = static_cast<int>((firstKey >> 16) / static_cast<uint64_t>(nranks_));
  const auto to = static_cast<int>((firstKey >> 16) % static_cast<uint64_t>(nranks_));
  return Status::failure(
      ErrorCode::kInvalidArgument,
      fmt::format("unmatched send: {} sent a message to rank {} on lane {} that no step of rank {} "
                  "receives ({} message(s) left on that connection)",
                  where(from, first->channel, static_cast<uint32_t>(first->step), first->tile), to,
                  lane, to, fifos_.at(firstKey).size()));
}

Status Replay::checkOutputs() const {
  std::vector<std::vector<Expectation>> pointToPoint;
  if (plans_[0].collective == Collective::kSendRecv) {
    if (Status paired = pointToPointExpectations(plans_, &pointToPoint); !paired.ok()) {
      return paired;
    }
  }
  for (int r = 0; r < nranks_; ++r) {
    const Plan& p = plans_[r];
    const RankState& st = state_[r];
    for (uint32_t o = 0; o < p.chunks(BufferKind::kOutput); ++o) {
      const Expectation expected =
          pointToPoint.empty() ? expectedOutput(p, o) : pointToPoint[static_cast<size_t>(r)][o];
      if (expected.kind == Expectation::Kind::kUnchecked) continue;
      for (uint32_t t = 0; t < tiles_; ++t) {
        const size_t at = size_t{st.cellOf[static_cast<int>(BufferKind::kOutput)][o]} * tiles_ + t;
        const Value& value = st.values[at];
        const Access& access = st.access[at];
        const std::string name = fmt::format("rank {} out[{}] (tile {})", r, o, t);
        std::string writer;
        if (access.writer >= 0) {
          const int wc = channelOwner_[access.writer].second;
          writer = fmt::format("; last written by channel {} step {} ({})", wc, access.writerStep,
                               toText(stepAt(r, wc, static_cast<uint32_t>(access.writerStep))));
        }
        if (!value.defined) {
          return Status::failure(
              ErrorCode::kInvalidArgument,
              fmt::format("{} was never written; expected {}", name, describe(expected.items)));
        }
        if (expected.kind == Expectation::Kind::kEveryRank) {
          std::vector<bool> present(static_cast<size_t>(nranks_));
          for (Contribution item : value.items) {
            if (contributorRank(item) < present.size()) present[contributorRank(item)] = true;
          }
          for (int q = 0; q < nranks_; ++q) {
            if (!present[static_cast<size_t>(q)]) {
              return Status::failure(ErrorCode::kInvalidArgument,
                                     fmt::format("{} lacks the token of rank {}: holds {}{}", name,
                                                 q, describe(value.items), writer));
            }
          }
          continue;
        }
        if (value.items != expected.items) {
          std::vector<Contribution> missing;
          std::vector<Contribution> extra;
          std::set_difference(expected.items.begin(), expected.items.end(), value.items.begin(),
                              value.items.end(), std::back_inserter(missing));
          std::set_difference(value.items.begin(), value.items.end(), expected.items.begin(),
                              expected.items.end(), std::back_inserter(extra));
          std::string detail;
          if (!missing.empty()) detail += "; missing contribution(s) " + describe(missing, 4);
          if (!extra.empty()) detail += "; unexpected contribution(s) " + describe(extra, 4);
          return Status::failure(
              ErrorCode::kInvalidArgument,
              fmt::format("{} holds {}, expected {}{}{}", name, describe(value.items),
                          describe(expected.items), detail, writer));
        }
        if (expected.finalized && !value.finalized) {
          return Status::failure(
              ErrorCode::kInvalidArgument,
              fmt::format("{} holds every contribution but was never finalized: mark "
                          "the step that completes it with finalize{}",
                          name, writer));
        }
      }
    }
  }
  return Status();
}

}  // namespace verifier_model

Status verify(const std::vector<Plan>& plans, const VerifyOptions& options) {
  if (Status structure = verifier_model::checkStructure(plans, options); !structure.ok()) {
    return structure;
  }
  verifier_model::Replay replay(plans, options);
  Status status = replay.run();
  if (status.ok()) status = replay.checkFifosEmpty();
  if (status.ok()) status = replay.checkOutputs();
  return status;
}

}  // namespace grove::plan
