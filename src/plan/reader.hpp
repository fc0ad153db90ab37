// Reads the text form of a plan back (the inverse of plan/printer.hpp's toText).
//
// Plans are saved as text so that a plan a user or a test found interesting can be replayed,
// verified and executed later. The text may come from anywhere (files, the fuzzer), so the
// reader trusts nothing: every number is range-checked and every failure is an error string,
// never a crash or an exception.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.hpp"
#include "plan/plan.hpp"

namespace grove::plan {

/// Parses exactly the form toText(const Plan&) prints (blank lines, spaces and tabs between
/// tokens, and a '\r' before '\n' are tolerated). Checks that: numbers are decimal and in
/// range (1 <= nranks <= 2^20, 0 <= rank < nranks, -1 <= root < nranks, 1 <= chunksPerBlock
/// <= 2^20, blocks * chunksPerBlock < 2^32, peers in [0, nranks), chunk indices below the
/// buffer's chunk count, lane < 2^16); channels and steps are numbered 0, 1, ... in order;
/// every step names exactly the peers and operands its kind uses; `after` names an existing
/// step. Semantic rules (no self-sends, correct results) are the verifier's business.
///
/// Returns the plan, or kInvalidArgument with a message naming the line. For every plan p whose
/// unused operands hold their defaults and whose algorithm name has no whitespace,
/// fromText(toText(p)) reproduces p.
Expected<Plan> fromText(std::string_view text);

}  // namespace grove::plan
